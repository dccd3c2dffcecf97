package drift

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDiff(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"l": "v"}},
		"spec": map[string]any{
			"n": int64(5), "f": float64(2), "list": []any{map[string]any{"a": "b"}}, "empty": map[string]any{},
		},
	}}
	live := desired.DeepCopy()
	live.Object["status"] = map[string]any{"ready": true}
	must(t, unstructured.SetNestedField(live.Object, "defaulted", "spec", "serverDefault"))
	must(t, unstructured.SetNestedField(live.Object, float64(5), "spec", "n"))
	must(t, unstructured.SetNestedField(live.Object, int64(2), "spec", "f"))
	must(t, unstructured.SetNestedSlice(live.Object, []any{map[string]any{"a": "b", "defaulted": int64(1)}}, "spec", "list"))
	unstructured.RemoveNestedField(live.Object, "spec", "empty")
	if d := Diff(desired, live, "me"); len(d) != 0 {
		t.Fatalf("defaults, other fields and number forms are not drift: %v", d)
	}

	must(t, unstructured.SetNestedField(live.Object, int64(6), "spec", "n"))
	must(t, unstructured.SetNestedSlice(live.Object, []any{}, "spec", "list"))
	unstructured.RemoveNestedField(live.Object, "metadata", "labels")
	got := Diff(desired, live, "me")
	want := []string{"/metadata/labels", "/spec/list", "/spec/n"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestDiffCountsDroppedOwnedFields(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"keep": "x"}}}
	live := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"keep": "x", "old": "y"}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "me", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:keep":{},"f:old":{}}}`),
	}})
	if got := Diff(desired, live, "me"); !reflect.DeepEqual(got, []string{"/spec/old"}) {
		t.Fatalf("a field we applied but no longer want is drift (apply deletes it): %v", got)
	}
	if got := Diff(desired, live, "someone-else"); len(got) != 0 {
		t.Fatalf("only our own Apply entry counts: %v", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
