package managedfields

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// FuzzFieldsV1: any managedFields content decodes or is ignored; owner and
// dropped-field questions never panic.
func FuzzFieldsV1(f *testing.F) {
	for _, s := range []string{
		`{"f:spec":{"f:a":{},"f:list":{"k:{\"name\":\"x\"}":{"f:v":{}}}}}`,
		`{"f:spec":{"f:args":{"v:\"a\"":{}}}}`, `{"f:spec":{"f:m":{".":{},"f:x":{}}}}`,
		`{}`, `[]`, `{"k:{":{}}`, `null`,
	} {
		f.Add(s, "v1")
	}
	f.Fuzz(func(t *testing.T, fields, version string) {
		live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "spec": map[string]any{
			"a": "1", "list": []any{map[string]any{"name": "x", "v": "1"}}, "args": []any{"a"}, "m": map[string]any{"x": "1"},
		}}}
		for _, m := range []string{"me", "other"} {
			live.SetManagedFields(append(live.GetManagedFields(), metav1.ManagedFieldsEntry{
				Manager: m, Operation: metav1.ManagedFieldsOperationApply, APIVersion: version, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(fields),
			}))
		}
		for _, p := range []jsonpointer.Pointer{{"spec", "a"}, {"spec", "list", "0", "v"}, {"spec", "args", "0"}, {"spec", "m"}, {"spec", "list", "9"}} {
			Owners(live, p, "me")
		}
		Dropped(live, map[string]any{"spec": map[string]any{"a": "1"}}, "me")
		Applied(live, "me")
		// Whatever it yields is something desired sets, never identity.
		desired := map[string]any{"spec": map[string]any{"a": "2", "list": []any{map[string]any{"name": "x", "v": "2"}}, "m": map[string]any{"x": "2"}}}
		for _, h := range HeldBy(live, desired, func(m string) bool { return m == "other" }, "me", nil, nil) {
			if _, ok := jsonpointer.Resolve(desired, h.Pointer); !ok || h.Pointer[0] == "metadata" {
				t.Fatalf("held %s, which desired does not set", h.Pointer)
			}
		}
		OtherVersions(live, func(string) bool { return true }, "me")
	})
}
