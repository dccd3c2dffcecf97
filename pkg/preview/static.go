package preview

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
