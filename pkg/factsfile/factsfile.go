// Package factsfile writes what the autopilot read from a cluster as one
// file of Kubernetes objects, and reads it back as the same facts: render
// --output facts writes one, render --facts-file and the KRM function
// (fn) render from it offline, exactly as the controller would on that
// cluster (except for an asset the controller holds in backoff after a
// failure, which is process state).
//
// The file is a v1 List: the objects as read (Nodes and CRDs trimmed as
// the controller's cache trims them, Secret data redacted), and one
// ConfigMap, the header, for what no object holds: the HCO namespace, the
// operand images, how each CRD version merges, which kinds were listed
// and which reads failed. Plain objects keep it readable, diffable in Git
// and valid as kustomize or kpt input.
package factsfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// HeaderName names the header ConfigMap.
const HeaderName = "virt-platform-autopilot-facts"

// Format is the header's format; a reader refuses another.
const Format = "2"

// Header keys.
const (
	keyFormat     = "format"
	keyVersion    = "version"
	keyNamespace  = "namespace"
	keyAssumeAll  = "assumeAllKinds"
	keyImages     = "images"
	keyStructures = "structures"
	keyListed     = "listed"
	keyReads      = "reads"
	keyUnread     = "unread"
	keyAbsent     = "absent"
)

// Snapshot is what one evaluation read.
type Snapshot struct {
	Facts rendercontext.Facts
	// Live are the objects the evaluation read as live (engine.LiveReader).
	// Read back, every object of the file is live.
	Live []*unstructured.Unstructured
	// Absent are the live reads that found nothing. Read back, a live read
	// of neither an object of the file nor one of these is unknown.
	Absent []rendercontext.ObjectKey
	// Version is the autopilot's version that wrote the file.
	Version string
}

// ref names an object or kind in the header.
type ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
}

// unread is a read that failed: unknown, never absent.
type unread struct {
	Fact string `json:"fact"`
	ref
	Error string `json:"error"`
}

// Facts named in unread.
const (
	factPeers           = "peers"
	factPools           = "pools"
	factStorageProfiles = "storageProfiles"
	factStorageClasses  = "storageClasses"
	factObject          = "object"
)

func refOf(gvk schema.GroupVersionKind, namespace, name string) ref {
	return ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: namespace, Name: name}
}

// gvk is r's kind; an apiVersion that does not parse gives a kind no
// lookup matches (Decode refuses it where it matters).
func (r ref) gvk() schema.GroupVersionKind {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{Kind: r.Kind, Version: "invalid"}
	}
	return gv.WithKind(r.Kind)
}

func (r ref) key() rendercontext.ObjectKey {
	return rendercontext.ObjectKey{GVK: r.gvk(), Namespace: r.Namespace, Name: r.Name}
}

// Encode writes s as a List. keepSchema names the CRDs whose schemas
// templates read (rendercontext.SchemasKept).
func Encode(s Snapshot, keepSchema map[string]bool) (*unstructured.UnstructuredList, error) {
	f := s.Facts
	if f.HCO == nil {
		return nil, errors.New("no HyperConverged object was read: nothing to record")
	}
	h := header{data: map[string]string{keyFormat: Format, keyNamespace: f.Namespace}}
	if s.Version != "" {
		h.data[keyVersion] = s.Version
	}
	if f.AssumeAllKinds {
		h.data[keyAssumeAll] = "true"
	}
	w := &writer{seen: map[rendercontext.ObjectKey]bool{}}
	w.add(f.HCO, f.Infrastructure, f.Scheduler)

	// How each CRD version merges, read from the schemas before they are
	// trimmed (a CRD read back from a facts file has none: its recorded
	// structure stands).
	structures := map[string]map[string]structure.Structure{}
	for name, byVersion := range f.Structures {
		structures[name] = byVersion
	}
	store := structure.NewStore()
	for i := range f.CRDs {
		crd := f.CRDs[i].DeepCopy()
		store.Put(crd)
		rendercontext.TrimCRD(crd, keepSchema[crd.Name])
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		u, err := toUnstructured(crd)
		if err != nil {
			return nil, err
		}
		w.add(u)
	}
	for name, byVersion := range store.Snapshot() {
		structures[name] = byVersion
	}
	for i := range f.Nodes {
		n := rendercontext.TrimNode(&f.Nodes[i])
		n.APIVersion, n.Kind = "v1", "Node"
		// Not read, and new on every node update: noise in Git.
		n.UID, n.ResourceVersion = "", ""
		u, err := toUnstructured(n)
		if err != nil {
			return nil, err
		}
		w.add(u)
	}

	var listed []ref
	var failed []unread
	list := func(fact string, gvk schema.GroupVersionKind, objs []*unstructured.Unstructured, err error) {
		switch {
		case err != nil:
			failed = append(failed, unread{Fact: fact, ref: refOf(gvk, "", ""), Error: err.Error()})
		case objs != nil:
			listed = append(listed, refOf(gvk, "", ""))
			w.add(objs...)
		}
	}
	list(factPools, rendercontext.PoolGVK, f.Pools, f.PoolsErr)
	for _, gvk := range sortedGVKs(f.Peers, f.PeersErr) {
		list(factPeers, gvk, f.Peers[gvk], f.PeersErr[gvk])
	}
	list(factStorageProfiles, rendercontext.StorageProfileGVK, f.StorageProfiles, f.StorageProfilesErr)
	list(factStorageClasses, rendercontext.StorageClassGVK, f.StorageClasses, f.StorageClassesErr)

	if f.Objects != nil || f.ObjectErrs != nil {
		var reads []ref
		for k := range f.Objects {
			reads = append(reads, refOf(k.GVK, k.Namespace, k.Name))
		}
		sortRefs(reads)
		for _, r := range reads {
			w.add(f.Objects[r.key()])
		}
		for k, err := range f.ObjectErrs {
			failed = append(failed, unread{Fact: factObject, ref: refOf(k.GVK, k.Namespace, k.Name), Error: err.Error()})
		}
		if err := h.set(keyReads, reads); err != nil {
			return nil, err
		}
	}
	w.add(s.Live...)
	absent := make([]ref, 0, len(s.Absent))
	for _, k := range s.Absent {
		absent = append(absent, refOf(k.GVK, k.Namespace, k.Name))
	}
	sortRefs(absent)

	sort.Slice(failed, func(i, j int) bool {
		return failed[i].Fact+failed[i].key().String() < failed[j].Fact+failed[j].key().String()
	})
	for k, v := range map[string]any{keyImages: f.Images, keyStructures: structures, keyListed: listed, keyUnread: failed, keyAbsent: absent} {
		if err := h.set(k, v); err != nil {
			return nil, err
		}
	}
	out := &unstructured.UnstructuredList{}
	out.SetAPIVersion("v1")
	out.SetKind("List")
	out.Items = append(out.Items, h.object(f.Namespace))
	for _, u := range w.items {
		out.Items = append(out.Items, *u)
	}
	return out, nil
}

// writer collects each object once, in the order first met.
type writer struct {
	items []*unstructured.Unstructured
	seen  map[rendercontext.ObjectKey]bool
}

func (w *writer) add(objs ...*unstructured.Unstructured) {
	for _, u := range objs {
		if u == nil {
			continue
		}
		k := rendercontext.ObjectKey{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if w.seen[k] {
			continue
		}
		w.seen[k] = true
		w.items = append(w.items, mark(redact.Object(u)))
	}
}

// mark marks a copy of u as a facts file's: Marker for the KRM function,
// which takes exactly these items as the facts, and local-config, so a
// pipeline never applies it (kustomize and kpt drop local-config objects
// from what they write). Read back, both marks are removed.
func mark(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := canonical(u)
	ann := c.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[LocalConfig] = "true"
	ann[Marker] = Format + "/" + digest(c)
	c.SetAnnotations(ann)
	return c
}

// Marker marks each object of a facts file: the format and a digest of
// the object as read, so a change on the way (a pipeline's labels,
// namespace or name prefix, an edit) is refused rather than read as the
// cluster's. Its own key: a live object's settle stamp
// (annotations.Facts) is a fact the file records, never overwritten.
const Marker = "platform.kubevirt.io/facts-file"

// canonical is a copy of u without the pipeline's annotations (and
// without an annotations map left empty), as the digest covers it.
func canonical(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := withoutRuntimeAnnotations(u).DeepCopy()
	if a, ok := c.Object["metadata"].(map[string]any); ok {
		if m, _ := a["annotations"].(map[string]any); len(m) == 0 {
			delete(a, "annotations") // absent, null or empty: the same
		}
	}
	return c
}

// digest hashes an object's JSON (maps in key order).
func digest(u *unstructured.Unstructured) string {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "unhashable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// checkMark refuses an object whose content is not what was written.
func checkMark(u *unstructured.Unstructured) error {
	v, ok := u.GetAnnotations()[Marker]
	if !ok {
		return nil // objects given without marks (a file assembled by hand) are taken as they are
	}
	c := canonical(u)
	if want := Format + "/" + digest(c); v != want {
		return fmt.Errorf("%s %s/%s changed after the facts were written (a pipeline's labels, annotations, namespace or name prefix, or an edit): keep the facts file as written, in a kustomization of its own", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	return nil
}

// LocalConfig is the KRM mark of input that is never applied.
const LocalConfig = "config.kubernetes.io/local-config"

// Marked reports whether u is an object of a facts file.
func Marked(u *unstructured.Unstructured) bool {
	_, ok := u.GetAnnotations()[Marker]
	return ok
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func sortedGVKs(m map[schema.GroupVersionKind][]*unstructured.Unstructured, errs map[schema.GroupVersionKind]error) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for gvk := range m {
		seen[gvk] = true
		out = append(out, gvk)
	}
	for gvk := range errs {
		if !seen[gvk] {
			out = append(out, gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func sortRefs(rs []ref) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].key().String() < rs[j].key().String() })
}

// header is the ConfigMap holding what no object holds.
type header struct{ data map[string]string }

func (h header) set(key string, v any) error {
	// Indented: one line per entry reads and diffs well in Git.
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("facts header %s: %w", key, err)
	}
	h.data[key] = string(b)
	return nil
}

// check refuses a header without a key format 1 always writes, or with
// one it does not know.
func (h header) check() error {
	known := map[string]bool{keyFormat: true, keyVersion: false, keyNamespace: true, keyAssumeAll: false,
		keyImages: true, keyStructures: true, keyListed: true, keyReads: false, keyUnread: true, keyAbsent: true}
	for k := range h.data {
		if _, ok := known[k]; !ok {
			return fmt.Errorf("facts header key %q is not understood (written by a newer version?): write the file again with this version's 'render --output facts'", k)
		}
	}
	for k, required := range known {
		if _, ok := h.data[k]; required && !ok {
			return fmt.Errorf("facts header lacks %q: write the file again with 'render --output facts'", k)
		}
	}
	return nil
}

func (h header) get(key string, into any) error {
	v, ok := h.data[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal([]byte(v), into); err != nil {
		return fmt.Errorf("facts header %s: %w", key, err)
	}
	return nil
}

func (h header) object(namespace string) unstructured.Unstructured {
	cm := &corev1.ConfigMap{Data: h.data}
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	cm.Name, cm.Namespace = HeaderName, namespace
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
	return *mark(&unstructured.Unstructured{Object: m})
}

// isHeader reports whether u is the header.
func isHeader(u *unstructured.Unstructured) bool {
	return u.GetAPIVersion() == "v1" && u.GetKind() == "ConfigMap" && u.GetName() == HeaderName
}

// Decode reads the facts back from a file's objects (a List flattened, or
// a KRM ResourceList's items). The objects are the cluster as read: every
// one of them is live.
func Decode(items []*unstructured.Unstructured) (Snapshot, error) {
	var s Snapshot
	var h *header
	var objs []*unstructured.Unstructured
	seen := map[rendercontext.ObjectKey]bool{}
	for _, u := range items {
		if err := checkMark(u); err != nil {
			return s, err
		}
		u = withoutRuntimeAnnotations(u)
		if isHeader(u) {
			if h != nil {
				return s, fmt.Errorf("two facts headers (ConfigMap %s): give one cluster's facts", HeaderName)
			}
			data, _, err := unstructured.NestedStringMap(u.Object, "data")
			if err != nil {
				return s, fmt.Errorf("facts header: %w", err)
			}
			h = &header{data: data}
			continue
		}
		k := rendercontext.ObjectKey{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if seen[k] {
			return s, fmt.Errorf("%s appears twice: a facts file holds each object once (two files, or an edit?); write it again with 'render --output facts'", k)
		}
		seen[k] = true
		objs = append(objs, u)
	}
	if h == nil {
		return s, fmt.Errorf("no facts header (ConfigMap %s): not a facts file; write one with 'render --kubeconfig ... --output facts'", HeaderName)
	}
	if v := h.data[keyFormat]; v != Format {
		return s, fmt.Errorf("facts format %q: this autopilot reads format %s; write the file again with this version's 'render --output facts'", v, Format)
	}
	if err := h.check(); err != nil {
		return s, err
	}
	f := &s.Facts
	f.Namespace = h.data[keyNamespace]
	f.AssumeAllKinds = h.data[keyAssumeAll] == "true"
	s.Version = h.data[keyVersion]
	var listed, reads, absent []ref
	var failed []unread
	for k, into := range map[string]any{keyImages: &f.Images, keyStructures: &f.Structures, keyListed: &listed, keyReads: &reads, keyUnread: &failed, keyAbsent: &absent} {
		if err := h.get(k, into); err != nil {
			return s, err
		}
	}

	// Which lists were taken: a kind listed empty is "none", a kind not
	// listed is "not installed".
	isListed := map[schema.GroupVersionKind]bool{}
	for _, r := range listed {
		g := r.gvk()
		if _, peer := rendercontext.PeerKinds[g]; !peer && g != rendercontext.PoolGVK && g != rendercontext.StorageProfileGVK && g != rendercontext.StorageClassGVK {
			return s, fmt.Errorf("facts header %s: %s is not a kind the autopilot lists (written by a newer version?)", keyListed, g)
		}
		isListed[g] = true
		switch g {
		case rendercontext.PoolGVK:
			f.Pools = []*unstructured.Unstructured{}
		case rendercontext.StorageProfileGVK:
			f.StorageProfiles = []*unstructured.Unstructured{}
		case rendercontext.StorageClassGVK:
			f.StorageClasses = []*unstructured.Unstructured{}
		default:
			if f.Peers == nil {
				f.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{}
			}
			f.Peers[g] = []*unstructured.Unstructured{}
		}
	}
	if h.data[keyReads] != "" {
		f.Objects = make(map[rendercontext.ObjectKey]*unstructured.Unstructured, len(reads))
		for _, r := range reads {
			f.Objects[r.key()] = nil
		}
	}
	for _, u := range failed {
		err := errors.New(u.Error)
		switch u.Fact {
		case factPools:
			f.PoolsErr = err
		case factStorageProfiles:
			f.StorageProfilesErr = err
		case factStorageClasses:
			f.StorageClassesErr = err
		case factPeers:
			if f.PeersErr == nil {
				f.PeersErr = map[schema.GroupVersionKind]error{}
			}
			f.PeersErr[u.gvk()] = err
		case factObject:
			if f.ObjectErrs == nil {
				f.ObjectErrs = map[rendercontext.ObjectKey]error{}
			}
			f.ObjectErrs[u.key()] = err
		default:
			return s, fmt.Errorf("facts header %s: unknown fact %q", keyUnread, u.Fact)
		}
	}

	for _, u := range objs {
		if err := place(f, u, isListed); err != nil {
			return s, err
		}
	}
	if f.HCO == nil {
		return s, fmt.Errorf("the facts hold no HyperConverged %s/%s (a pipeline that renamed or re-namespaced the facts changes what they say: leave them as written)", f.Namespace, rendercontext.HCOName)
	}
	s.Live = objs
	for _, r := range absent {
		s.Absent = append(s.Absent, r.key())
	}
	return s, nil
}

// place gives an object each role it plays in the facts.
func place(f *rendercontext.Facts, u *unstructured.Unstructured, listed map[schema.GroupVersionKind]bool) error {
	gvk := u.GroupVersionKind()
	switch {
	case gvk == rendercontext.HCOGVK && u.GetName() == rendercontext.HCOName && u.GetNamespace() == f.Namespace:
		f.HCO = u
	case gvk == rendercontext.InfrastructureGVK && u.GetName() == "cluster":
		f.Infrastructure = u
	case gvk == rendercontext.SchedulerGVK && u.GetName() == "cluster":
		f.Scheduler = u
	case gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Node":
		var n corev1.Node
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n); err != nil {
			return fmt.Errorf("node %s: %w", u.GetName(), err)
		}
		f.Nodes = append(f.Nodes, n)
	case gvk == schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}:
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			return fmt.Errorf("CRD %s: %w", u.GetName(), err)
		}
		f.CRDs = append(f.CRDs, crd)
	}
	if listed[gvk] {
		switch gvk {
		case rendercontext.PoolGVK:
			f.Pools = append(f.Pools, u)
		case rendercontext.StorageProfileGVK:
			f.StorageProfiles = append(f.StorageProfiles, u)
		case rendercontext.StorageClassGVK:
			f.StorageClasses = append(f.StorageClasses, u)
		default:
			f.Peers[gvk] = append(f.Peers[gvk], u)
		}
	}
	k := rendercontext.ObjectKey{GVK: gvk, Namespace: u.GetNamespace(), Name: u.GetName()}
	if _, read := f.Objects[k]; read {
		f.Objects[k] = u
	}
	return nil
}

// withoutRuntimeAnnotations drops what Encode, kustomize and kpt add to
// the items (the local-config mark, file paths, indexes, ids):
// bookkeeping of the pipeline, not of the cluster.
func withoutRuntimeAnnotations(u *unstructured.Unstructured) *unstructured.Unstructured {
	ann := u.GetAnnotations()
	drop := false
	for k := range ann {
		if runtimeAnnotation(k) {
			drop = true
		}
	}
	if !drop {
		return u
	}
	c := u.DeepCopy()
	kept := map[string]string{}
	for k, v := range ann {
		if !runtimeAnnotation(k) {
			kept[k] = v
		}
	}
	if len(kept) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	} else {
		c.SetAnnotations(kept)
	}
	return c
}

func runtimeAnnotation(k string) bool {
	switch k {
	case Marker, Signature, LocalConfig, "config.kubernetes.io/index", "config.kubernetes.io/path", "config.kubernetes.io/id", "config.k8s.io/id",
		"config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations", "kustomize.config.k8s.io/id":
		return true
	}
	return strings.HasPrefix(k, "internal.config.kubernetes.io/")
}
