package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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

// errDiffNeedsCluster: a diff is a server-side dry-run.
var errDiffNeedsCluster = errors.New("--output diff compares with a live cluster: use --kubeconfig")

// factsSource is render's Source for --facts-file: the cluster as a facts
// file recorded it, verified with the key in keyFile when one is given.
type factsSource struct{ path, keyFile string }

func (p factsSource) Read(_ context.Context, cat *catalog.Catalog) (Input, error) {
	key, err := readFactsKey(p.keyFile)
	if err != nil {
		return Input{}, err
	}
	objs, err := preview.ReadObjects(p.path)
	if err != nil {
		return Input{}, fmt.Errorf("--facts-file: %w", err)
	}
	in, err := factsInput(objs, cat, key)
	if err != nil {
		return Input{}, fmt.Errorf("--facts-file %s: %w", p.path, err)
	}
	return in, nil
}

// readFactsKey reads the key of --facts-key (none: nil). Surrounding
// whitespace is not part of it (a key written by 'openssl rand -base64
// 32 > key' ends with a newline).
func readFactsKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--facts-key: %w", err)
	}
	key := bytes.TrimSpace(raw)
	if len(key) < factsfile.MinKeyBytes {
		return nil, fmt.Errorf("--facts-key %s: %d bytes; a key is at least %d random bytes ('openssl rand -base64 32')", path, len(key), factsfile.MinKeyBytes)
	}
	return key, nil
}

func (factsSource) Diff(context.Context, *rendercontext.RenderContext, []engine.Decision, bool, io.Writer) error {
	return errDiffNeedsCluster
}

// factsInput reads facts back from a facts file's objects (render
// --facts-file, the KRM function).
//
// A file is data with an author. Verified with key, it is taken as the
// cluster's. Otherwise its author is trusted as an editor of the HCO
// (whose inputs choose only what the catalog ships), never as the author
// of what is applied: an object carrying a patch or ignore-fields, whose
// content the render copies into its output, is refused.
func factsInput(objs []*unstructured.Unstructured, cat *catalog.Catalog, key []byte) (Input, error) {
	if key != nil {
		if err := factsfile.Verify(objs, key); err != nil {
			return Input{}, fmt.Errorf("%w: refused (sign it with 'render --output facts --facts-key' and the same key)", err)
		}
	}
	s, err := factsfile.Decode(objs)
	if err != nil {
		return Input{}, err
	}
	if c := s.Customizations(); key == nil && len(c) > 0 {
		return Input{}, fmt.Errorf("%s: a facts file not verified with --facts-key may not carry these customizations, whose content the render copies into what it outputs (the file's author would choose it); write the facts with 'render --output facts --facts-key KEY' and render them with the same key", strings.Join(c, ", "))
	}
	unverified := key == nil
	hadImages := len(s.Facts.Images) > 0
	if unverified && hadImages {
		// Operand images are code the output runs (a privileged exporter):
		// an unverified file does not choose them. This environment's are
		// used, as an offline render from files takes them.
		s.Facts.Images = rendercontext.ImagesFromEnv(os.Environ())
	}
	in := Input{Facts: s.Facts, Live: s.Reader(), Unverified: unverified}
	if unverified && hadImages {
		in.Notes = append(in.Notes, "the facts file is not verified (--facts-key): operand images are taken from this environment (RELATED_IMAGE_*), not from the file")
	}
	ver, _ := Version()
	if s.Version != "" {
		in.Notes = append(in.Notes, fmt.Sprintf("facts recorded by %s %s", Name, s.Version))
	}
	if s.Version != ver {
		// A kind this version lists that the writer's did not: unknown.
		unlisted(&in.Facts, fmt.Errorf("not listed in the facts file (written by %s %s): write the facts again with %s %s", Name, s.Version, Name, ver))
	}
	// An object this catalog reads that the writer's did not was never
	// read: unknown, never absent.
	if in.Facts.Objects != nil {
		for _, k := range rendercontext.Reads(cat) {
			if _, read := in.Facts.Objects[k]; read {
				continue
			}
			if _, failed := in.Facts.ObjectErrs[k]; failed {
				continue
			}
			if in.Facts.ObjectErrs == nil {
				in.Facts.ObjectErrs = map[rendercontext.ObjectKey]error{}
			}
			in.Facts.ObjectErrs[k] = fmt.Errorf("%s is not in the facts file (written by %s %s, whose assets do not read it): write the facts again with %s %s", k, Name, s.Version, Name, ver)
		}
	}
	return in, nil
}

// unlisted marks each kind the autopilot lists whose CRD the facts hold,
// but which was neither listed nor failed, as failed with err.
func unlisted(f *rendercontext.Facts, err error) {
	installed := map[string]bool{}
	for i := range f.CRDs {
		installed[f.CRDs[i].Name] = true
	}
	for gvk, crd := range rendercontext.PeerKinds {
		if _, listed := f.Peers[gvk]; installed[crd] && !listed && f.PeersErr[gvk] == nil {
			if f.PeersErr == nil {
				f.PeersErr = map[schema.GroupVersionKind]error{}
			}
			f.PeersErr[gvk] = err
		}
	}
	if installed[rendercontext.PoolCRD] && f.Pools == nil && f.PoolsErr == nil {
		f.PoolsErr = err
	}
	if installed[rendercontext.StorageProfileCRD] && f.StorageProfiles == nil && f.StorageProfilesErr == nil {
		f.StorageProfilesErr = err
	}
}

// writeFacts writes what was read as a facts file; nothing when a fact
// could not be read (the file would record a guess as the cluster's).
func writeFacts(w io.Writer, cat *catalog.Catalog, in Input, reads *recorder, keyFile string) error {
	key, err := readFactsKey(keyFile)
	if err != nil {
		return err
	}
	live, err := reads.objects()
	if err != nil {
		return err
	}
	if unknown := unread(in); len(unknown) > 0 {
		return fmt.Errorf("could not read %s: no facts written (they would record a guess); fix what is named and run it again (reading a cluster needs what config/rbac grants the autopilot; --autopilot-deployment names its Deployment; facts from another version are written again from the cluster)", strings.Join(unknown, "; "))
	}
	ver, _ := Version()
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: in.Facts, Live: live, Absent: reads.absentKeys(), Version: ver}, rendercontext.SchemasKept(cat))
	if err != nil {
		return err
	}
	if key != nil {
		if err := factsfile.Sign(list, key); err != nil {
			return err
		}
	}
	y, err := objyaml.Marshal(list.UnstructuredContent())
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// unread lists the facts in that could not be read.
func unread(in Input) []string {
	out := append([]string(nil), in.Unknown...)
	f := in.Facts
	for what, err := range map[string]error{"MachineConfigPools": f.PoolsErr, "StorageProfiles": f.StorageProfilesErr, "StorageClasses": f.StorageClassesErr} {
		if err != nil {
			out = append(out, what+" ("+err.Error()+")")
		}
	}
	for gvk, err := range f.PeersErr {
		out = append(out, gvk.Kind+" ("+err.Error()+")")
	}
	for k, err := range f.ObjectErrs {
		out = append(out, k.String()+" ("+err.Error()+")")
	}
	sort.Strings(out)
	return out
}

// recorder is a LiveReader that keeps what it read.
type recorder struct {
	live   engine.LiveReader
	mu     sync.Mutex
	seen   map[rendercontext.ObjectKey]*unstructured.Unstructured
	absent map[rendercontext.ObjectKey]bool
	// failed is the first read that failed: the facts would hold a
	// guess, so none are written.
	failed error
}

// Live implements engine.LiveReader.
func (r *recorder) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := r.live.Live(ctx, gvk, namespace, name)
	r.record(gvk, namespace, name, u, err)
	return u, err
}

// Owned implements engine.OwnedReader, as the controller's reader does.
// The object is recorded whatever its labels: another activation may read
// it with Live.
func (r *recorder) Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return preview.OnlyOwned(r.Live(ctx, gvk, namespace, name))
}

func (r *recorder) record(gvk schema.GroupVersionKind, namespace, name string, u *unstructured.Unstructured, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		if r.failed == nil {
			r.failed = fmt.Errorf("read %s %s/%s: %w", gvk.Kind, namespace, name, err)
		}
	case u != nil:
		if r.seen == nil {
			r.seen = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
		}
		r.seen[rendercontext.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}] = u.DeepCopy()
	default:
		if r.absent == nil {
			r.absent = map[rendercontext.ObjectKey]bool{}
		}
		r.absent[rendercontext.ObjectKey{GVK: gvk, Namespace: namespace, Name: name}] = true
	}
}

// absentKeys are the reads that found nothing.
func (r *recorder) absentKeys() []rendercontext.ObjectKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]rendercontext.ObjectKey, 0, len(r.absent))
	for k := range r.absent {
		out = append(out, k)
	}
	return out
}

// objects are the objects read, in a stable order; an error when a read
// failed.
func (r *recorder) objects() ([]*unstructured.Unstructured, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return nil, fmt.Errorf("%w; no facts written (they would record a guess): fix it and run it again (reading a cluster needs what config/rbac grants the autopilot)", r.failed)
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

// targets reads each decision's object: what any activation evaluates,
// whether or not this evaluation read it.
func (r *recorder) targets(ctx context.Context, eval engine.Evaluation) {
	for i := range eval.Decisions {
		if t := eval.Decisions[i].Rendered; t != nil {
			_, _ = r.Live(ctx, t.GroupVersionKind(), t.GetNamespace(), t.GetName())
		}
	}
}
