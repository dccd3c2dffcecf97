package preview

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// Static serves live objects from memory: offline, the HCO file is the live
// HCO, so its own patch, ignore-fields and mode annotations apply.
type Static []*unstructured.Unstructured

// Live implements engine.LiveReader.
func (s Static) Live(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	for _, u := range s {
		if u.GroupVersionKind() == gvk && u.GetNamespace() == namespace && u.GetName() == name {
			return u.DeepCopy(), nil
		}
	}
	return nil, nil
}

// Owned implements engine.OwnedReader as the controller's label-filtered
// cache answers: only an object carrying the autopilot's label.
func (s Static) Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return OnlyOwned(s.Live(ctx, gvk, namespace, name))
}

// OnlyOwned keeps a live read's object only when it carries the
// autopilot's label, as the controller's label-filtered cache answers.
func OnlyOwned(u *unstructured.Unstructured, err error) (*unstructured.Unstructured, error) {
	if err != nil || u == nil || !annotations.Labelled(u.GetLabels()) {
		return nil, err
	}
	return u, nil
}
