package factsfile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Reader serves a facts file's live reads (engine.LiveReader): an object
// of the file as it was read, a read that found nothing as absent, and
// any other read, one the writer's evaluation never made (another
// version's assets), as unknown, never as absent.
type Reader struct {
	objs    map[rendercontext.ObjectKey]*unstructured.Unstructured
	absent  map[rendercontext.ObjectKey]bool
	version string
}

// Reader serves s's live reads.
func (s Snapshot) Reader() *Reader {
	r := &Reader{objs: map[rendercontext.ObjectKey]*unstructured.Unstructured{}, absent: map[rendercontext.ObjectKey]bool{}, version: s.Version}
	for _, u := range s.Live {
		r.objs[rendercontext.ObjectKey{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}] = u
	}
	for _, k := range s.Absent {
		r.absent[k] = true
	}
	return r
}

// Live implements engine.LiveReader.
func (r *Reader) Live(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	k := rendercontext.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}
	if u, ok := r.objs[k]; ok {
		return u.DeepCopy(), nil
	}
	if r.absent[k] {
		return nil, nil
	}
	return nil, fmt.Errorf("%s was not read when the facts were written (by version %q, whose assets do not read it): write the facts again with this version", k, r.version)
}

// Owned implements engine.OwnedReader as the controller's label-filtered
// cache answers.
func (r *Reader) Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return preview.OnlyOwned(r.Live(ctx, gvk, namespace, name))
}
