package managedfields

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestOwners(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"gates":  []any{map[string]any{"name": "A", "state": "Enabled"}, map[string]any{"name": "B"}},
		"args":   []any{"psi=1"},
		"scalar": "x",
	}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("me", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:args":{},"f:scalar":{}}}`),
		entry("hco", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:state":{}}}}}`),
		entry("other", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:gates":{"k:{\"name\":\"B\"}":{".":{}}},"f:args":{}}}`),
	})
	cases := map[string][]string{
		"/spec/gates/0/state": {"hco"},
		"/spec/gates/1":       {"other"},
		"/spec/args/0":        {"other"}, // atomic list: its owner owns every element
		"/spec/scalar":        {},
		"/spec/gates":         {"hco", "other"},
	}
	for ptr, want := range cases {
		p, _ := jsonpointer.Parse(ptr)
		if got := Owners(live, p, "me"); !reflect.DeepEqual(got, want) {
			t.Errorf("Owners(%s) = %v, want %v", ptr, got, want)
		}
	}
	if !Applied(live, "me") || Applied(live, "hco") {
		t.Error("Applied must only see Apply entries of the manager")
	}
}

func TestDroppedKeyedList(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("me", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:name":{},"f:labels":{"f:l":{}}},"f:spec":{"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:name":{}},"k:{\"name\":\"B\"}":{".":{},"f:name":{}}}}}`),
	})
	desired := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"l": "v"}},
		"spec":     map[string]any{"gates": []any{map[string]any{"name": "A"}}},
	}
	got := Dropped(live, desired, "me")
	if len(got) != 1 || got[0] != "/spec/gates/name=B" {
		t.Fatalf("got %v", got)
	}
}

func TestEntriesOfAnotherVersionSayNothing(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hco.kubevirt.io/v1", "spec": map[string]any{"a": "x", "old": "y"}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "me", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "hco.kubevirt.io/v1beta1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:old":{}}}`)},
		{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "hco.kubevirt.io/v1beta1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:a":{}}}`)},
		{Manager: "third", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "hco.kubevirt.io/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:a":{}}}`)},
	})
	if got := Owners(live, jsonpointer.Pointer{"spec", "a"}, "me"); len(got) != 1 || got[0] != "third" {
		t.Fatalf("only entries of the live apiVersion are read: %v", got)
	}
	if got := Dropped(live, map[string]any{"spec": map[string]any{"a": "x"}}, "me"); len(got) != 0 {
		t.Fatalf("our v1beta1 entry's paths are not v1 paths: %v", got)
	}
	if !Applied(live, "me") {
		t.Fatal("an Apply entry in any version proves provenance")
	}
}

func TestUnownedFieldsAreFound(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "spec": map[string]any{"a": "1", "b": "2",
		"gates": []any{map[string]any{"name": "A", "state": "on"}}}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("me", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:name":{}},"f:spec":{"f:a":{},"f:gates":{"k:{\"name\":\"A\"}":{".":{},"f:name":{}}}}}`),
		entry("other", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:b":{},"f:gates":{"k:{\"name\":\"A\"}":{"f:state":{}}}}}`),
	})
	desired := map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"},
		"spec": map[string]any{"a": "1", "b": "2", "gates": []any{map[string]any{"name": "A", "state": "on"}}}}
	got := Unowned(live, desired, "me")
	if len(got) != 2 || got[0] != "/spec/b" || got[1] != "/spec/gates/0/state" {
		t.Fatalf("fields another manager took over count, even with equal values: %v", got)
	}
	if got := Unowned(live, desired, "never-applied"); got != nil {
		t.Fatalf("without an Apply entry there is nothing to lose: %v", got)
	}
}

// Holds: the manager's own Apply entry owns the whole field. A field the
// API server moved to another manager (an update that changed it) or that
// nobody owns (removed, or never applied) is not held; an entry of another
// apiVersion says nothing.
func TestHolds(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "spec": map[string]any{
		"mine": int64(5), "taken": int64(9), "args": []any{"psi=1"}, "nested": map[string]any{"a": "x"},
	}}}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("me", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:mine":{},"f:args":{},"f:nested":{"f:a":{}}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:taken":{}}}`),
	})
	for ptr, want := range map[string]bool{
		"/spec/mine": true, "/spec/args": true, "/spec/args/0": true, "/spec/nested/a": true,
		"/spec/taken": false, "/spec/absent": false, "/spec/nested": false, // only part of it: not the whole
	} {
		p, _ := jsonpointer.Parse(ptr)
		if got := Holds(live, p, "me"); got != want {
			t.Errorf("Holds(%s) = %v, want %v", ptr, got, want)
		}
	}
	p, _ := jsonpointer.Parse("/spec/taken")
	if Holds(live, p, "kubectl-edit") {
		t.Error("an Update entry is not the manager's applied intent")
	}
	other := live.DeepCopy()
	mf := other.GetManagedFields()
	mf[0].APIVersion = "example.com/v2"
	other.SetManagedFields(mf)
	if p, _ := jsonpointer.Parse("/spec/mine"); Holds(other, p, "me") {
		t.Error("an entry of another apiVersion says nothing")
	}
}
