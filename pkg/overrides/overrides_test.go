package overrides

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

func obj(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "n", "namespace": "ns"},
		"spec":     spec,
	}}
}

func TestApplyPatch(t *testing.T) {
	p, err := annotations.ParsePatch(`[{"op":"replace","path":"/spec/a","value":2},{"op":"add","path":"/spec/list/-","value":"z"}]`)
	if err != nil {
		t.Fatal(err)
	}
	base := obj(map[string]any{"a": int64(1), "list": []any{"y"}})
	out, err := ApplyPatch(base, p)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(out.Object, "spec", "a"); v != 2 {
		t.Fatalf("a = %d", v)
	}
	if l, _, _ := unstructured.NestedStringSlice(out.Object, "spec", "list"); len(l) != 2 {
		t.Fatalf("list = %v", l)
	}
	if v, _, _ := unstructured.NestedInt64(base.Object, "spec", "a"); v != 1 {
		t.Fatal("the input must not change")
	}
	bad, _ := annotations.ParsePatch(`[{"op":"remove","path":"/spec/nothere"}]`)
	if _, err := ApplyPatch(base, bad); err == nil || !strings.Contains(err.Error(), "does not apply") {
		t.Fatalf("want does-not-apply error, got %v", err)
	}
}

func managed(u *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType, fields string) {
	mf := u.GetManagedFields()
	mf = append(mf, metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)})
	u.SetManagedFields(mf)
}

func TestMask(t *testing.T) {
	live := obj(map[string]any{"mine": int64(7), "theirs": int64(9), "args": []any{"a", "user"}})
	managed(live, "autopilot", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:mine":{},"f:args":{}}}`)
	managed(live, "kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:theirs":{}}}`)

	desired := obj(map[string]any{"mine": int64(1), "theirs": int64(2), "gone": int64(3), "args": []any{"a"}})
	ptrs, err := annotations.ParseIgnoreFields("/spec/mine, /spec/theirs,/spec/gone , /spec/args/1")
	if err != nil {
		t.Fatal(err)
	}
	if u := Mask(desired, live, ptrs, "autopilot", structure.Structure{}); len(u) != 0 {
		t.Fatalf("unresolved: %v", u)
	}
	spec := desired.Object["spec"].(map[string]any)
	if spec["mine"] != int64(7) {
		t.Errorf("a field only the autopilot owns adopts the live value, got %v", spec["mine"])
	}
	if _, ok := spec["theirs"]; ok {
		t.Error("a field another manager owns is dropped so the autopilot does not co-own it")
	}
	if _, ok := spec["gone"]; ok {
		t.Error("a field absent live is dropped")
	}
	if args := spec["args"].([]any); len(args) != 2 || args[1] != "user" {
		t.Errorf("a list element keeps its live value (the list is applied whole), got %v", args)
	}
	if _, err := annotations.ParseIgnoreFields("/metadata/name"); err == nil {
		t.Error("identity pointers must be refused")
	}
	if _, err := annotations.ParseIgnoreFields("/metadata"); err == nil {
		t.Error("a pointer covering identity must be refused")
	}
	if _, err := annotations.ParseIgnoreFields("spec/x"); err == nil {
		t.Error("pointers must start with /")
	}
}

// Issue: ignore-fields on a map, after someone edits one child, must keep
// the autopilot's other children as they are live, not drop them.
func TestMaskMapLeafByLeaf(t *testing.T) {
	live := obj(map[string]any{"lm": map[string]any{"a": int64(2), "b": int64(5), "c": int64(1)}})
	managed(live, "autopilot", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:lm":{"f:a":{},"f:c":{}}}}`)
	managed(live, "kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:lm":{"f:b":{}}}}`)
	desired := obj(map[string]any{"lm": map[string]any{"a": int64(9), "b": int64(9), "d": int64(9)}})
	ptrs, _ := annotations.ParseIgnoreFields("/spec/lm")
	Mask(desired, live, ptrs, "autopilot", structure.Structure{})
	want := map[string]any{"a": int64(2), "c": int64(1)}
	if got := desired.Object["spec"].(map[string]any)["lm"]; !equalJSON(got, want) {
		t.Fatalf("got %v, want %v: children only the autopilot owns keep their live values, the edited child is released, absent ones dropped", got, want)
	}
}

func TestMaskKeyedListAndUnresolved(t *testing.T) {
	gates := func(state string) []any {
		return []any{map[string]any{"name": "A", "state": "on"}, map[string]any{"name": "B", "state": state}}
	}
	live := obj(map[string]any{"gates": gates("user")})
	managed(live, "autopilot", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:gates":{}}}`)
	// desired lists the elements in another order: the key finds them.
	desired := obj(map[string]any{"gates": []any{map[string]any{"name": "B", "state": "golden"}, map[string]any{"name": "A", "state": "on"}}})
	ptrs, _ := annotations.ParseIgnoreFields("/spec/gates/name=B/state,/spec/gates/name=Z/state,/spec/nothing")
	u := Mask(desired, live, ptrs, "autopilot", structure.Structure{})
	if g := desired.Object["spec"].(map[string]any)["gates"].([]any); len(g) != 2 || g[0].(map[string]any)["state"] != "user" {
		t.Fatalf("keyed pointer must address element B wherever it is: %v", g)
	}
	if len(u) != 2 || u[0] != "/spec/gates/name=Z/state" || u[1] != "/spec/nothing" {
		t.Fatalf("pointers that resolve nowhere are reported: %v", u)
	}
	// A positional pointer past desired's end in a keyed list never appends
	// a keyless element.
	desired = obj(map[string]any{"gates": []any{map[string]any{"name": "A", "state": "on"}}})
	ptrs, _ = annotations.ParseIgnoreFields("/spec/gates/1/state")
	Mask(desired, live, ptrs, "autopilot", structure.Structure{Known: true, GranularLists: map[string][]string{"/spec/gates": {"name"}}})
	if g := desired.Object["spec"].(map[string]any)["gates"].([]any); len(g) != 1 {
		t.Fatalf("no element may be added: %v", g)
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// A pointer on (or above) a granular list never drops the list because
// someone owns one element: the autopilot's elements stay, key fields
// always stay, others' elements are not taken over.
func TestMaskGranularListKeepsOurElements(t *testing.T) {
	st := structure.Structure{Known: true, GranularLists: map[string][]string{"/spec/gates": {"name"}}}
	live := obj(map[string]any{"gates": []any{
		map[string]any{"name": "A", "state": "on"},
		map[string]any{"name": "B", "state": "user"},
	}})
	managed(live, "autopilot", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:state":{}}}}}`)
	managed(live, "admin", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:gates":{"k:{\"name\":\"A\"}":{"f:name":{}},"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:state":{}}}}}`)
	desired := obj(map[string]any{"gates": []any{map[string]any{"name": "A", "state": "golden"}, map[string]any{"name": "C", "state": "x"}}})
	for _, ptr := range []string{"/spec/gates", "/spec"} {
		d := desired.DeepCopy()
		ptrs, _ := annotations.ParseIgnoreFields(ptr)
		Mask(d, live, ptrs, "autopilot", st)
		want := []any{map[string]any{"name": "A", "state": "on"}}
		if got := d.Object["spec"].(map[string]any)["gates"]; !equalJSON(got, want) {
			t.Errorf("%s: got %v, want %v", ptr, got, want)
		}
	}
}
