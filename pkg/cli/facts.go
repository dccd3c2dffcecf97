package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/factsfile"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// factsSource is render's Source for --facts-file: the cluster as a facts
// file recorded it.
type factsSource string

func (p factsSource) Read(context.Context, *catalog.Catalog) (Input, error) {
	objs, err := preview.ReadObjects(string(p))
	if err != nil {
		return Input{}, fmt.Errorf("--facts-file: %w", err)
	}
	return factsInput(objs)
}

func (factsSource) Diff(context.Context, *rendercontext.RenderContext, []engine.Decision, bool, io.Writer) error {
	return fmt.Errorf("--output diff compares with a live cluster: use --kubeconfig instead of --facts-file")
}

// factsInput reads facts back from a facts file's objects (render
// --facts-file, the KRM function).
func factsInput(objs []*unstructured.Unstructured) (Input, error) {
	s, err := factsfile.Decode(objs)
	if err != nil {
		return Input{}, err
	}
	in := Input{Facts: s.Facts, Live: preview.Static(s.Live)}
	if s.Version != "" {
		in.Notes = append(in.Notes, fmt.Sprintf("facts recorded by %s %s", Name, s.Version))
	}
	return in, nil
}

// writeFacts writes what was read as a facts file.
func writeFacts(w io.Writer, cat *catalog.Catalog, f rendercontext.Facts, reads *recorder) error {
	live, err := reads.objects()
	if err != nil {
		return err
	}
	ver, _ := Version()
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: live, Version: ver}, rendercontext.SchemasKept(cat))
	if err != nil {
		return err
	}
	y, err := objyaml.Marshal(list.UnstructuredContent())
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// recorder is a LiveReader that keeps what it read.
type recorder struct {
	engine.LiveReader
	mu   sync.Mutex
	seen map[rendercontext.ObjectKey]*unstructured.Unstructured
	// failed is the first read that failed: the facts would hold a
	// guess, so none are written.
	failed error
}

func (r *recorder) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := r.LiveReader.Live(ctx, gvk, namespace, name)
	if err != nil {
		r.mu.Lock()
		if r.failed == nil {
			r.failed = fmt.Errorf("read %s %s/%s: %w", gvk.Kind, namespace, name, err)
		}
		r.mu.Unlock()
	}
	if err == nil && u != nil {
		r.mu.Lock()
		if r.seen == nil {
			r.seen = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
		}
		r.seen[rendercontext.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}] = u.DeepCopy()
		r.mu.Unlock()
	}
	return u, err
}

// objects are the objects read, in a stable order; an error when a read
// failed.
func (r *recorder) objects() ([]*unstructured.Unstructured, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return nil, fmt.Errorf("%w; no facts written (they would record a guess): try again", r.failed)
	}
	keys := make([]rendercontext.ObjectKey, 0, len(r.seen))
	for k := range r.seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]*unstructured.Unstructured, 0, len(keys))
	for _, k := range keys {
		out = append(out, r.seen[k])
	}
	return out, nil
}
