package engine_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// A field a declared owner holds on the live object is left out of what
// the autopilot applies and reported; the same field held by an
// undeclared manager, or with yield-to "none", is the autopilot's.
func TestYieldToDeclaredOwners(t *testing.T) {
	first := evaluate(t, nil, "psi-enable", nil)
	live := first.Desired.DeepCopy()
	_ = unstructured.SetNestedStringSlice(live.Object, []string{"psi=0"}, "spec", "kernelArguments")
	owned := func(manager string) *unstructured.Unstructured {
		u := live.DeepCopy()
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:machineconfiguration.openshift.io/role":{}}}}`)},
			{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: u.GetAPIVersion(), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:kernelArguments":{}}}`)},
		})
		return u
	}
	key := "MachineConfig//" + live.GetName()
	for _, c := range []struct {
		name    string
		ann     map[string]string
		manager string
		defers  bool
	}{
		{"a default owner", nil, "argocd-controller", true},
		{"an undeclared manager", nil, "kubectl-edit", false},
		{"a declared manager", map[string]string{annotations.YieldTo: "my-pipeline"}, "my-pipeline", true},
		{"declared, without the defaults", map[string]string{annotations.YieldTo: "my-pipeline"}, "argocd-controller", false},
		{"no one", map[string]string{annotations.YieldTo: "none"}, "argocd-controller", false},
		{"not understood: the defaults still apply", map[string]string{annotations.YieldTo: "argo cd"}, "argocd-controller", true},
	} {
		d := evaluate(t, c.ann, "psi-enable", liveMap{key: owned(c.manager)})
		_, sets, _ := unstructured.NestedStringSlice(d.Desired.Object, "spec", "kernelArguments")
		switch {
		case c.defers && (len(d.Deferred) != 1 || d.Deferred[0].Field != "/spec/kernelArguments" || sets):
			t.Errorf("%s: deferred %v, desired sets the field: %v", c.name, d.Deferred, sets)
		case !c.defers && (len(d.Deferred) != 0 || !sets):
			t.Errorf("%s: deferred %v, desired sets the field: %v", c.name, d.Deferred, sets)
		}
	}
	if d := evaluate(t, nil, "psi-enable", liveMap{key: owned("argocd-controller")}); d.Deferred[0].Managers[0] != "argocd-controller" {
		t.Errorf("the owner is named: %v", d.Deferred)
	}
	// The owner wrote in another apiVersion: its fields cannot be read
	// as this one's, so the object is kept as it is, never forced.
	other := owned("argocd-controller")
	mf := other.GetManagedFields()
	mf[1].APIVersion = "machineconfiguration.openshift.io/v1beta1"
	other.SetManagedFields(mf)
	if d := evaluate(t, nil, "psi-enable", liveMap{key: other}); d.Verdict != engine.VerdictRetained || d.Desired != nil {
		t.Errorf("an owner in another apiVersion: %s %s", d.Verdict, d.Reason)
	}
}
