package controller

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// A deletion follows the HCO as the API server has it, not a cache that
// is behind: an exclusion added a moment ago protects the object.
func TestFreshIntentReadsTheHCOOnceAndOnlyWhenAsked(t *testing.T) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendercontext.HCOGVK)
	live.SetNamespace("ns")
	live.SetName(rendercontext.HCOName)
	live.SetAnnotations(map[string]string{annotations.DisabledResources: "MachineConfig/x"})
	reads := 0
	c := fake.NewClientBuilder().WithObjects(live).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	stale := live.DeepCopy()
	stale.SetAnnotations(nil)
	f := &freshIntent{reader: c, namespace: "ns", cached: rendercontext.New(rendercontext.Facts{HCO: stale})}
	if reads != 0 {
		t.Fatal("nothing is read until a deletion asks")
	}
	for i := 0; i < 2; i++ {
		rc, err := f.context(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok, why := engine.GuardFor(rc).MayDelete(provablyOurs()); ok || !strings.Contains(why, "disabled-resources") {
			t.Fatalf("the fresh exclusion must protect it: %v %q", ok, why)
		}
	}
	if reads != 1 {
		t.Fatalf("one read per reconcile, got %d", reads)
	}
	if ok, why := engine.GuardFor(f.cached).MayDelete(provablyOurs()); !ok {
		t.Fatalf("the stale context alone would have deleted it (%s): the test must tell them apart", why)
	}

	gone := &freshIntent{reader: fake.NewClientBuilder().Build(), namespace: "ns", cached: f.cached}
	if _, err := gone.context(context.Background()); err == nil {
		t.Fatal("an HCO that cannot be read gives no context: unknown never deletes")
	}
}

// provablyOurs is a MachineConfig only an exclusion can protect.
func provablyOurs() *unstructured.Unstructured {
	mc := &unstructured.Unstructured{}
	mc.SetAPIVersion("machineconfiguration.openshift.io/v1")
	mc.SetKind("MachineConfig")
	mc.SetName("x")
	mc.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
	mc.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	return mc
}
