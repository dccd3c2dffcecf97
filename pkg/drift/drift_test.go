package drift

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
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
	if d := Diff(desired, live, "me", structure.Structure{}); len(d) != 0 {
		t.Fatalf("defaults, other fields and number forms are not drift: %v", d)
	}
	unstructured.RemoveNestedField(live.Object, "spec", "empty")
	if d := Diff(desired, live, "me", structure.Structure{}); !reflect.DeepEqual(d, []string{"/spec/empty"}) {
		t.Fatalf("an empty map is a value apply sets: %v", d)
	}
	must(t, unstructured.SetNestedField(live.Object, map[string]any{}, "spec", "empty"))

	must(t, unstructured.SetNestedField(live.Object, int64(6), "spec", "n"))
	must(t, unstructured.SetNestedSlice(live.Object, []any{}, "spec", "list"))
	unstructured.RemoveNestedField(live.Object, "metadata", "labels")
	got := Diff(desired, live, "me", structure.Structure{})
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
	if got := Diff(desired, live, "me", structure.Structure{}); !reflect.DeepEqual(got, []string{"/spec/old"}) {
		t.Fatalf("a field we applied but no longer want is drift (apply deletes it): %v", got)
	}
	if got := Diff(desired, live, "someone-else", structure.Structure{}); len(got) != 0 {
		t.Fatalf("only our own Apply entry counts: %v", got)
	}
}

func TestDiffAtomicMapsAndLists(t *testing.T) {
	list, atomicMap := "map", "atomic"
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1", Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"selector": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"matchLabels": {Type: "object", XMapType: &atomicMap, AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				}},
				"labels":  {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
				"args":    {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}},
				"entries": {Type: "array", XListType: &list, XListMapKeys: []string{"name"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}},
			}}},
		}},
	}}}}
	st := structure.FromCRD(crd, "v1")
	desired := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"pool": "worker"}},
		"labels":   map[string]any{"a": "1"},
		"args":     []any{map[string]any{"k": "v"}},
		"entries":  []any{map[string]any{"name": "x", "v": "1"}},
	}}}
	live := desired.DeepCopy()
	// Others may add to granular maps, to granular lists (in any order)
	// and to their elements.
	must(t, unstructured.SetNestedField(live.Object, "2", "spec", "labels", "b"))
	must(t, unstructured.SetNestedSlice(live.Object, []any{map[string]any{"name": "other"}, map[string]any{"name": "x", "v": "1", "extra": "y"}}, "spec", "entries"))
	if d := Diff(desired, live, "me", st); len(d) != 0 {
		t.Fatalf("additions to granular maps and lists are not drift: %v", d)
	}
	// A key added to an atomic map or to an element of an atomic list is:
	// the next apply replaces them whole.
	must(t, unstructured.SetNestedField(live.Object, "x", "spec", "selector", "matchLabels", "extra"))
	must(t, unstructured.SetNestedSlice(live.Object, []any{map[string]any{"k": "v", "added": "z"}}, "spec", "args"))
	if d := Diff(desired, live, "me", st); !reflect.DeepEqual(d, []string{"/spec/args", "/spec/selector/matchLabels"}) {
		t.Fatalf("atomic maps and lists must be equal as a whole: %v", d)
	}
	// An element of ours gone from a granular list is drift, at its index.
	must(t, unstructured.SetNestedSlice(live.Object, []any{map[string]any{"name": "other"}}, "spec", "entries"))
	if d := Diff(desired, live, "me", st); !reflect.DeepEqual(d, []string{"/spec/args", "/spec/entries/0", "/spec/selector/matchLabels"}) {
		t.Fatalf("a missing keyed element is drift: %v", d)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
