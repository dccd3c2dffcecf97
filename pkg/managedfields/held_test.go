package managedfields

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// A yielded manager's fields that desired also sets are held, at the
// owner's leaf, list items by key; its item existence and key fields, other
// managers' fields, the caller's own keys and identity never are.
func TestHeldBy(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"mine": "1", "app": "a"}},
		"spec": map[string]any{
			"a":      int64(1),
			"b":      int64(2),
			"c":      int64(3),
			"gates":  []any{map[string]any{"name": "A", "state": "Enabled", "extra": "y"}},
			"args":   []any{"psi=1"},
			"set":    []any{"x", "y"},
			"theirs": "only theirs",
		},
	}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("me", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:b":{},"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:extra":{}}}}}`),
		entry("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:name":{},"f:labels":{"f:mine":{},"f:app":{}}},"f:spec":{"f:a":{},"f:args":{},"f:theirs":{},"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:state":{}}},"f:set":{"v:\"x\"":{}}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:c":{}}}`),
	})
	desired := map[string]any{
		"apiVersion": "v1", "kind": "X",
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"mine": "1", "app": "a"}},
		"spec": map[string]any{
			"a": int64(10), "b": int64(2), "c": int64(30),
			"gates": []any{map[string]any{"name": "A", "state": "Disabled", "extra": "y"}},
			"args":  []any{"psi=0"},
			"set":   []any{"x"},
		},
	}
	yield := func(m string) bool { return m == "argocd-controller" }
	keep := func(p jsonpointer.Pointer) bool { return p.String() == "/metadata/labels/mine" }
	got := fmt.Sprint(HeldBy(live, desired, yield, "me", keep, nil))
	want := "[{/metadata/labels/app [argocd-controller]} {/spec/a [argocd-controller]} {/spec/args [argocd-controller]} {/spec/gates/name=A/state [argocd-controller]}]"
	if got != want {
		t.Fatalf("HeldBy =\n%s\nwant\n%s", got, want)
	}
	if h := HeldBy(live, desired, func(string) bool { return false }, "me", nil, nil); h != nil {
		t.Fatalf("yielding to no one holds %v", h)
	}
	if h := HeldBy(live, desired, func(m string) bool { return m == "me" }, "me", nil, nil); h != nil {
		t.Fatalf("the autopilot never yields to itself: %v", h)
	}
}

// A map the owner only created (granular), or one item of a set, is never
// withheld whole: the server would delete the autopilot's other fields or
// items. A map the schema makes atomic is the owner's whole.
func TestHeldByNeverWithholdsAContainer(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"foo": map[string]any{"a": "mine"},
		"sel": map[string]any{"k": "v"},
		"set": []any{"x", "y"},
	}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:foo":{},"f:sel":{},"f:set":{"v:\"x\"":{}}}}`),
	})
	desired := map[string]any{"spec": map[string]any{"foo": map[string]any{"a": "mine"}, "sel": map[string]any{"k": "w"}, "set": []any{"x", "y"}}}
	atomic := func(p jsonpointer.Pointer) bool { return p.String() == "/spec/sel" }
	got := fmt.Sprint(HeldBy(live, desired, func(m string) bool { return m == "argocd-controller" }, "me", nil, atomic))
	if got != "[{/spec/sel [argocd-controller]}]" {
		t.Fatalf("HeldBy = %s", got)
	}
}
