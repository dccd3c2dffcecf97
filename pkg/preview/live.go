package preview

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LiveReader reads live objects straight from a cluster (the CLI has no cache).
type LiveReader struct{ Reader client.Reader }

// Live implements engine.LiveReader.
func (l LiveReader) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(namespace)
	ref.SetName(name)
	return get(ctx, l.Reader, ref)
}

func isNoMatch(err error) bool { return err != nil && meta.IsNoMatchError(err) }

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
