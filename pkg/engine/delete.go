package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ProvablyOurs reports whether live may be deleted by the autopilot: it
// carries the managed-by label, the autopilot's field manager applied it
// (operators copy labels; managedFields are not copied), and the user has
// not opted it out. If not, it says why.
func ProvablyOurs(live *unstructured.Unstructured) (bool, string) {
	if live.GetLabels()[annotations.ManagedByLabel] != annotations.ManagedByValue {
		return false, fmt.Sprintf("no %s=%s label", annotations.ManagedByLabel, annotations.ManagedByValue)
	}
	if !managedfields.Applied(live, annotations.FieldManager) {
		return false, fmt.Sprintf("field manager %s never applied it", annotations.FieldManager)
	}
	if live.GetAnnotations()[annotations.Mode] == annotations.ModeUnmanaged {
		return false, fmt.Sprintf("annotated %s=%s", annotations.Mode, annotations.ModeUnmanaged)
	}
	if !live.GetDeletionTimestamp().IsZero() {
		return false, "already being deleted"
	}
	return true, ""
}

// SafeDelete deletes live if it is provably ours, with UID and
// resourceVersion preconditions so a replaced or changed object survives.
// It returns deleted=false with a reason when it refused; NotFound is success.
func SafeDelete(ctx context.Context, c client.Writer, live *unstructured.Unstructured) (bool, string, error) {
	if ok, why := ProvablyOurs(live); !ok {
		return false, why, nil
	}
	uid, rv := live.GetUID(), live.GetResourceVersion()
	err := c.Delete(ctx, live, client.Preconditions{UID: &uid, ResourceVersion: &rv},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return false, "", err
	}
	return true, "", nil
}

// RemovalCandidate returns the object an inactive opt-in asset would have
// created, if it may be looked up for removal: root-excluded objects and
// kinds the cluster does not serve are never removed. nil otherwise.
func RemovalCandidate(d *Decision, rc *rendercontext.RenderContext) *unstructured.Unstructured {
	obj := d.Rendered
	if d.Outcome != Inactive || !d.Asset.OptIn() || obj == nil || !rc.KindAvailable(obj.GroupVersionKind()) {
		return nil
	}
	if _, hit := rc.Exclusions.Match(obj.GetKind(), obj.GetNamespace(), obj.GetName()); hit {
		return nil
	}
	return obj
}

// CreatedFor reports whether live is the object the autopilot created for
// asset d, and may therefore be removed when the asset turns off.
func CreatedFor(d *Decision, live *unstructured.Unstructured) bool {
	if live == nil || live.GetAnnotations()[annotations.Asset] != d.Asset.Name {
		return false
	}
	ok, _ := ProvablyOurs(live)
	return ok
}
