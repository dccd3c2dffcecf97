package factsfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/factsfile"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

func obj(gvk schema.GroupVersionKind, ns, name string, r *rand.Rand) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetGeneration(r.Int63n(5))
	// Annotations as a cluster or a hand-written file holds them: none,
	// null, empty, or some.
	switch r.Intn(4) {
	case 0:
		u.SetAnnotations(map[string]string{"platform.kubevirt.io/mode": "unmanaged", "note": fmt.Sprint(r.Intn(100))})
	case 1:
		u.Object["metadata"].(map[string]any)["annotations"] = nil
	case 2:
		u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{}
	}
	if r.Intn(2) == 0 {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: gvk.GroupVersion().String(), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:x":{}}}`)}})
	}
	_ = unstructured.SetNestedField(u.Object, map[string]any{"x": r.Int63n(1000), "on": "yes", "ratio": 0.5, "list": []any{"a", int64(2)}}, "spec")
	return u
}

func crd(name, group, kind string, schemaed bool) apiextensionsv1.CustomResourceDefinition {
	c := apiextensionsv1.CustomResourceDefinition{}
	c.Name = name
	c.Annotations = map[string]string{"controller-gen.kubebuilder.io/version": "v0.16"}
	c.Spec.Group, c.Spec.Names.Kind = group, kind
	atomic := "atomic"
	for _, v := range []string{"v1alpha1", "v1"} {
		cv := apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == "v1"}
		if schemaed {
			cv.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"selector": {Type: "object", XMapType: &atomic}}}}}}
		}
		c.Spec.Versions = append(c.Spec.Versions, cv)
	}
	c.Status.StoredVersions = []string{"v1"}
	return c
}

// generate is a cluster's facts, every fact present, absent, empty or
// failed at random.
func generate(r *rand.Rand) (rendercontext.Facts, []*unstructured.Unstructured) {
	f := rendercontext.Facts{Namespace: []string{"openshift-cnv", "kubevirt-hyperconverged"}[r.Intn(2)], AssumeAllKinds: r.Intn(4) == 0}
	f.HCO = obj(rendercontext.HCOGVK, f.Namespace, rendercontext.HCOName, r)
	if r.Intn(2) == 0 {
		f.Infrastructure = obj(rendercontext.InfrastructureGVK, "", "cluster", r)
	}
	if r.Intn(2) == 0 {
		f.Scheduler = obj(rendercontext.SchedulerGVK, "", "cluster", r)
	}
	for i := range r.Intn(5) {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{
			"node-role.kubernetes.io/worker":                 "",
			"feature.node.kubernetes.io/cpu-model.vendor_id": []string{"Intel", "AMD"}[r.Intn(2)],
			"kubernetes.io/hostname":                         fmt.Sprint(i), // not read: trimmed
		}, Annotations: map[string]string{"machineconfiguration.openshift.io/state": "Done"}}}
		n.Status.Capacity = corev1.ResourceList{"cpu": resource.MustParse("64"), "nvidia.com/gpu": resource.MustParse(fmt.Sprint(r.Intn(3)))}
		if r.Intn(2) == 0 {
			capacity := uint64(r.Int63n(1 << 34))
			n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: ptr(int64(capacity))}
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: "Ready", Status: "True"}}
		f.Nodes = append(f.Nodes, n)
	}
	f.CRDs = []apiextensionsv1.CustomResourceDefinition{
		crd("things.example.com", "example.com", "Thing", r.Intn(2) == 0),
		crd("gates.example.com", "example.com", "Gate", true),
	}
	if r.Intn(3) == 0 {
		// Read back from an earlier facts file: no schema, its structure recorded.
		f.CRDs = append(f.CRDs, crd("old.example.com", "example.com", "Old", false))
		f.Structures = map[string]map[string]structure.Structure{"old.example.com": {"v1": {Known: true, AtomicMaps: map[string]bool{"/spec/s": true}}}}
	}
	list := func(gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
		switch r.Intn(4) {
		case 0:
			return nil, nil
		case 1:
			return nil, errors.New("list " + gvk.Kind + ": forbidden")
		case 2:
			return []*unstructured.Unstructured{}, nil
		}
		var out []*unstructured.Unstructured
		for i := range 1 + r.Intn(3) {
			out = append(out, obj(gvk, ns, fmt.Sprintf("%s-%d", strings.ToLower(gvk.Kind), i), r))
		}
		return out, nil
	}
	f.Pools, f.PoolsErr = list(rendercontext.PoolGVK, "")
	f.StorageProfiles, f.StorageProfilesErr = list(rendercontext.StorageProfileGVK, "")
	f.StorageClasses, f.StorageClassesErr = list(rendercontext.StorageClassGVK, "")
	for gvk := range rendercontext.PeerKinds {
		objs, err := list(gvk, "")
		switch {
		case err != nil:
			if f.PeersErr == nil {
				f.PeersErr = map[schema.GroupVersionKind]error{}
			}
			f.PeersErr[gvk] = err
		case objs != nil:
			if f.Peers == nil {
				f.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{}
			}
			f.Peers[gvk] = objs
		}
	}
	if r.Intn(3) != 0 {
		f.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
		cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		for i := range 3 {
			k := rendercontext.ObjectKey{GVK: cm, Namespace: "openshift-config", Name: fmt.Sprintf("read-%d", i)}
			switch r.Intn(3) {
			case 0:
				f.Objects[k] = nil
			case 1:
				f.Objects[k] = obj(cm, k.Namespace, k.Name, r)
			default:
				if f.ObjectErrs == nil {
					f.ObjectErrs = map[rendercontext.ObjectKey]error{}
				}
				f.ObjectErrs[k] = errors.New("get: timeout")
			}
		}
	}
	f.Images = map[string]string{"kubevirt-metrics-exporter": fmt.Sprintf("quay.io/x@sha256:%064d", r.Intn(1000))}
	// Live objects: the autopilot's, and one that is also a fact.
	live := []*unstructured.Unstructured{obj(schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}, "", "50-worker-x", r), f.HCO}
	return f, live
}

func ptr[T any](v T) *T { return &v }

// comparable renders facts as JSON, errors as their messages, so two
// Facts compare by what they say.
func comparable(t *testing.T, f rendercontext.Facts) map[string]any {
	t.Helper()
	errs := func(m any) any {
		out := map[string]string{}
		switch m := m.(type) {
		case map[schema.GroupVersionKind]error:
			for k, v := range m {
				out[k.String()] = v.Error()
			}
		case map[rendercontext.ObjectKey]error:
			for k, v := range m {
				out[k.String()] = v.Error()
			}
		}
		return out
	}
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	objects := map[string]any{}
	for k, v := range f.Objects {
		objects[k.String()] = v
	}
	peers := map[string]any{}
	for k, v := range f.Peers {
		peers[k.String()] = v
	}
	v := map[string]any{
		"namespace": f.Namespace, "hco": f.HCO, "infrastructure": f.Infrastructure, "scheduler": f.Scheduler,
		"nodes": f.Nodes, "crds": f.CRDs, "assumeAll": f.AssumeAllKinds,
		"peers": peers, "peersNil": f.Peers == nil, "peersErr": errs(f.PeersErr),
		"pools": f.Pools, "poolsNil": f.Pools == nil, "poolsErr": msg(f.PoolsErr),
		"profiles": f.StorageProfiles, "profilesNil": f.StorageProfiles == nil, "profilesErr": msg(f.StorageProfilesErr),
		"classes": f.StorageClasses, "classesNil": f.StorageClasses == nil, "classesErr": msg(f.StorageClassesErr),
		"objects": objects, "objectsNil": f.Objects == nil, "objectErrs": errs(f.ObjectErrs),
		"structures": f.Structures, "images": f.Images,
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	dropEmptyAnnotations(out)
	return out
}

// dropEmptyAnnotations removes annotations that are null or empty: the
// same as none to every reader of an object (GetAnnotations).
func dropEmptyAnnotations(v any) {
	switch v := v.(type) {
	case map[string]any:
		if a, ok := v["annotations"]; ok {
			if m, _ := a.(map[string]any); len(m) == 0 {
				delete(v, "annotations")
			}
		}
		for _, x := range v {
			dropEmptyAnnotations(x)
		}
	case []any:
		for _, x := range v {
			dropEmptyAnnotations(x)
		}
	}
}

// expected is what a facts file must give back: nodes and CRDs trimmed as
// the controller's cache trims them, the structures of every schema.
func expected(f rendercontext.Facts, keep map[string]bool) rendercontext.Facts {
	var nodes []corev1.Node
	for i := range f.Nodes {
		n := rendercontext.TrimNode(&f.Nodes[i])
		n.APIVersion, n.Kind = "v1", "Node"
		nodes = append(nodes, *n)
	}
	store := structure.NewStore()
	var crds []apiextensionsv1.CustomResourceDefinition
	for i := range f.CRDs {
		c := f.CRDs[i].DeepCopy()
		store.Put(c)
		rendercontext.TrimCRD(c, keep[c.Name])
		c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		crds = append(crds, *c)
	}
	structures := map[string]map[string]structure.Structure{}
	for k, v := range f.Structures {
		structures[k] = v
	}
	for k, v := range store.Snapshot() {
		structures[k] = v
	}
	f.Nodes, f.CRDs, f.Structures = nodes, crds, structures
	return f
}

// A facts file, written and read back through YAML, says exactly what was
// read: every fact present, absent, listed empty or failed stays so.
func TestRoundTrip(t *testing.T) {
	keep := map[string]bool{"gates.example.com": true}
	for seed := range int64(300) {
		r := rand.New(rand.NewSource(seed))
		f, live := generate(r)
		list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: live, Version: "v9.9.9"}, keep)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		y, err := objyaml.Marshal(list.UnstructuredContent())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "facts.yaml")
		if err := os.WriteFile(path, y, 0o600); err != nil {
			t.Fatal(err)
		}
		items, err := preview.ReadObjects(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := factsfile.Decode(items)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if want, have := comparable(t, expected(f, keep)), comparable(t, got.Facts); !reflect.DeepEqual(want, have) {
			for k := range want {
				if !reflect.DeepEqual(want[k], have[k]) {
					t.Errorf("seed %d: %s:\n want %v\n got  %v", seed, k, want[k], have[k])
				}
			}
			t.FailNow()
		}
		if got.Version != "v9.9.9" {
			t.Fatalf("version %q", got.Version)
		}
		// Every live object read is live again, as it was read.
		for _, u := range live {
			if !hasObject(got.Live, u) {
				t.Fatalf("seed %d: live %s %s is not read back as it was", seed, u.GetKind(), u.GetName())
			}
		}
	}
}

func hasObject(objs []*unstructured.Unstructured, want *unstructured.Unstructured) bool {
	w := want.DeepCopy().Object
	dropEmptyAnnotations(w)
	for _, u := range objs {
		if reflect.DeepEqual(u.Object, w) {
			return true
		}
	}
	return false
}

// What kustomize and kpt add to the items they hand a function is not
// read as the cluster's; what the cluster holds is kept.
func TestPipelineAnnotationsAreDropped(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	f, live := generate(r)
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: live}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []*unstructured.Unstructured
	for i := range list.Items {
		u := list.Items[i].DeepCopy()
		if u.GetAnnotations()[factsfile.LocalConfig] != "true" {
			t.Fatalf("%s %s is not marked local-config: a pipeline would emit it", u.GetKind(), u.GetName())
		}
		ann := u.GetAnnotations()
		ann["config.kubernetes.io/index"] = fmt.Sprint(i)
		ann["internal.config.kubernetes.io/path"] = "facts.yaml"
		ann["config.k8s.io/id"] = "1"
		u.SetAnnotations(ann)
		items = append(items, u)
	}
	got, err := factsfile.Decode(items)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Facts.HCO.GetAnnotations(), f.HCO.GetAnnotations()) {
		t.Fatalf("HCO annotations %v, want %v", got.Facts.HCO.GetAnnotations(), f.HCO.GetAnnotations())
	}
	for _, u := range got.Live {
		for k := range u.GetAnnotations() {
			if strings.HasPrefix(k, "config.k") || strings.HasPrefix(k, "internal.config") {
				t.Fatalf("%s %s keeps %s", u.GetKind(), u.GetName(), k)
			}
		}
	}
}

// A Secret read as live keeps its keys, never its values.
func TestSecretDataIsNotWritten(t *testing.T) {
	f, _ := generate(rand.New(rand.NewSource(2)))
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "n", "annotations": map[string]any{
			"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"token":"c2VjcmV0"}}`}},
		"data": map[string]any{"token": "c2VjcmV0"}, "stringData": map[string]any{"p": "secret"}}}
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: []*unstructured.Unstructured{s}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := objyaml.Marshal(list.UnstructuredContent())
	if strings.Contains(string(y), "c2VjcmV0") || strings.Contains(string(y), "secret\n") {
		t.Fatalf("secret data written:\n%s", y)
	}
	if s.Object["data"].(map[string]any)["token"] != "c2VjcmV0" {
		t.Fatal("the caller's object was changed")
	}
}

// A file that is not one cluster's facts in this format is refused with
// what to do.
func TestDecodeRefuses(t *testing.T) {
	f, live := generate(rand.New(rand.NewSource(3)))
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: live}, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := func() []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for i := range list.Items {
			out = append(out, list.Items[i].DeepCopy())
		}
		return out
	}
	cases := map[string]func([]*unstructured.Unstructured) []*unstructured.Unstructured{
		"no facts header":   func(in []*unstructured.Unstructured) []*unstructured.Unstructured { return in[1:] },
		"two facts headers": func(in []*unstructured.Unstructured) []*unstructured.Unstructured { return append(in, in[0]) },
		`facts format "1"`: func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			_ = unstructured.SetNestedField(in[0].Object, "1", "data", "format")
			return in
		},
		"no HyperConverged": func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			var out []*unstructured.Unstructured
			for _, u := range in {
				if u.GetKind() != "HyperConverged" {
					out = append(out, u)
				}
			}
			return out
		},
		"appears twice": func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			return append(in, in[len(in)-1].DeepCopy())
		},
		`header key "extra" is not understood`: func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			_ = unstructured.SetNestedField(in[0].Object, "x", "data", "extra")
			return in
		},
		`header lacks "structures"`: func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			unstructured.RemoveNestedField(in[0].Object, "data", "structures")
			return in
		},
		"not a kind the autopilot lists": func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			_ = unstructured.SetNestedField(in[0].Object, `[{"apiVersion":"v1","kind":"Secret"}]`, "data", "listed")
			return in
		},
		"header images": func(in []*unstructured.Unstructured) []*unstructured.Unstructured {
			_ = unstructured.SetNestedField(in[0].Object, "[", "data", "images")
			return in
		},
	}
	for want, mutate := range cases {
		// As if written that way: marks and digests go with the edit.
		in := mutate(items())
		for _, u := range in {
			ann := u.GetAnnotations()
			delete(ann, factsfile.Marker)
			u.SetAnnotations(ann)
		}
		if _, err := factsfile.Decode(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	// An object changed on the way, its mark kept: refused, whichever
	// object and whatever the change.
	for i := range list.Items {
		for _, change := range []func(*unstructured.Unstructured){
			func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "a"}) },
			func(u *unstructured.Unstructured) { u.SetName("prefix-" + u.GetName()) },
			func(u *unstructured.Unstructured) { u.SetNamespace("elsewhere") },
			func(u *unstructured.Unstructured) {
				ann := u.GetAnnotations()
				ann["owner"] = "pipeline"
				u.SetAnnotations(ann)
			},
		} {
			in := items()
			change(in[i])
			if _, err := factsfile.Decode(in); err == nil || !strings.Contains(err.Error(), "changed after the facts were written") {
				t.Fatalf("item %d (%s %s) changed: got %v", i, in[i].GetKind(), in[i].GetName(), err)
			}
		}
	}
	if _, err := factsfile.Encode(factsfile.Snapshot{}, nil); err == nil {
		t.Error("facts without an HCO were written")
	}
}

// Read back, a live read is served as it was read: the object, absent, or
// (never made when the facts were written) unknown; Owned answers as the
// controller's label-filtered cache.
func TestReaderServesReadsAsRead(t *testing.T) {
	f, _ := generate(rand.New(rand.NewSource(4)))
	mc := schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	mine := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "ours", "labels": map[string]any{"platform.kubevirt.io/managed-by": "virt-platform-autopilot"}}}}
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "theirs"}}}
	gone := rendercontext.ObjectKey{GVK: mc, Name: "gone"}
	list, err := factsfile.Encode(factsfile.Snapshot{Facts: f, Live: []*unstructured.Unstructured{mine, theirs}, Absent: []rendercontext.ObjectKey{gone}, Version: "v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []*unstructured.Unstructured
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	s, err := factsfile.Decode(items)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Reader()
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		live, owned bool
		unknown     bool
	}{{"ours", true, true, false}, {"theirs", true, false, false}, {"gone", false, false, false}, {"never-read", false, false, true}} {
		u, err := r.Live(ctx, mc, "", c.name)
		if (err != nil) != c.unknown || (u != nil) != c.live {
			t.Errorf("Live %s: %v, %v", c.name, u != nil, err)
		}
		if c.unknown && !strings.Contains(err.Error(), "write the facts again") {
			t.Errorf("Live %s: %v does not say what to do", c.name, err)
		}
		u, err = r.Owned(ctx, mc, "", c.name)
		if (err != nil) != c.unknown || (u != nil) != c.owned {
			t.Errorf("Owned %s: %v, %v", c.name, u != nil, err)
		}
	}
}
