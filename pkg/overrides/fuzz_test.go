package overrides

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// FuzzPatch: any annotation value either fails with an error or yields an
// object with the same identity and server metadata (uid, resourceVersion,
// generation, creation time, finalizers, ownerReferences, managedFields)
// and status, that still encodes; it never panics.
func FuzzPatch(f *testing.F) {
	for _, s := range []string{
		`[{"op":"replace","path":"/spec/a","value":1}]`,
		`[{"op":"add","path":"/spec/list/-","value":"z"}]`,
		`[{"op":"replace","path":"/metadata","value":{}}]`,
		`[{"op":"move","from":"/spec/a","path":"/metadata/name"}]`,
		`[{"op":"copy","from":"/spec","path":"/spec/x"}]`,
		`[{"op":"test","path":"/spec/a","value":1}]`,
		`{}`, `[`, `[{"op":"remove","path":"/spec/list/-1"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := annotations.ParsePatch(v)
		if err != nil {
			return
		}
		base := obj(map[string]any{"a": int64(1), "list": []any{"y"}})
		md := base.Object["metadata"].(map[string]any)
		md["uid"], md["resourceVersion"], md["generation"] = "u-1", "42", int64(3)
		md["creationTimestamp"] = "2026-01-01T00:00:00Z"
		md["finalizers"] = []any{"keep.example.com"}
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u-0"}}
		md["managedFields"] = []any{map[string]any{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}}
		base.Object["status"] = map[string]any{"phase": "Ready"}
		want := base.DeepCopy()
		out, err := ApplyPatch(base, p)
		if err != nil {
			return
		}
		if out.GetName() != "n" || out.GetNamespace() != "ns" || out.GetKind() != "ConfigMap" || out.GetAPIVersion() != "v1" {
			t.Fatalf("identity changed by %s", v)
		}
		gotMD, _ := out.Object["metadata"].(map[string]any)
		for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "finalizers", "ownerReferences", "managedFields"} {
			if !equality.Semantic.DeepEqual(gotMD[k], want.Object["metadata"].(map[string]any)[k]) {
				t.Fatalf("metadata.%s changed by %s: %v", k, v, gotMD[k])
			}
		}
		if !equality.Semantic.DeepEqual(out.Object["status"], want.Object["status"]) {
			t.Fatalf("status changed by %s", v)
		}
		if _, err := out.MarshalJSON(); err != nil {
			t.Fatalf("the patched object does not encode (%s): %v", v, err)
		}
	})
}

// FuzzIgnoreFields: any annotation value is refused or masks without
// panicking, never adds a list element, and never makes desired invalid.
func FuzzIgnoreFields(f *testing.F) {
	for _, s := range []string{
		"/spec/a", "/spec/m", "/spec/list/0", "/spec/list/5", "/spec/keyed/name=x/v",
		"/spec/keyed/name=x&k=1", "/metadata", "/spec/m/x,/spec/a", "~", "/spec/~2", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ptrs, err := annotations.ParseIgnoreFields(v)
		if err != nil {
			return
		}
		spec := func() map[string]any {
			return map[string]any{"a": int64(1), "m": map[string]any{"x": "1", "y": "2"}, "list": []any{"y"},
				"keyed": []any{map[string]any{"name": "x", "v": "1"}}}
		}
		desired, live := obj(spec()), obj(spec())
		live.Object["spec"].(map[string]any)["list"] = []any{"y", "z"}
		live.Object["spec"].(map[string]any)["keyed"] = []any{map[string]any{"name": "x", "v": "2"}, map[string]any{"name": "y", "v": "3"}}
		managed(live, "me", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:a":{},"f:m":{"f:x":{}},"f:keyed":{"k:{\"name\":\"x\"}":{".":{},"f:name":{},"f:v":{}}}}}`)
		managed(live, "other", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:m":{"f:y":{}},"f:keyed":{"k:{\"name\":\"x\"}":{"f:name":{},"f:v":{}},"k:{\"name\":\"y\"}":{".":{},"f:name":{},"f:v":{}}}}}`)
		for _, st := range []structure.Structure{{}, {Known: true, GranularLists: map[string][]string{"/spec/keyed": {"name"}}}} {
			d := desired.DeepCopy()
			Mask(d, live, ptrs, "me", st)
			// Known granular list: only our element x is ever sent. Unknown
			// structure: the live list may be adopted whole (it keeps every
			// live element), but nothing that is not live, and no keyless one.
			allowed := map[any]bool{"x": true, "y": !st.Known}
			l, _, _ := unstructured.NestedSlice(d.Object, "spec", "keyed")
			for _, e := range l {
				if m, ok := e.(map[string]any); !ok || !allowed[m["name"]] {
					t.Fatalf("%q (structure known=%v) sent a keyed element it must not: %v", v, st.Known, l)
				}
			}
			if d.GetName() != "n" || d.GetNamespace() != "ns" || d.GetKind() != "ConfigMap" {
				t.Fatalf("%q changed identity", v)
			}
		}
	})
}
