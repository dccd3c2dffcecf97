// Package managedfields answers ownership questions from an object's
// server-side apply managedFields: who owns a field, whether the autopilot
// ever applied the object, and which of its owned fields a new desired state
// would drop (which apply would delete).
package managedfields

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// Applied reports whether manager has an Apply entry on obj, in any
// apiVersion: proof the autopilot wrote it, which a copied label alone is not.
func Applied(obj metav1.Object, manager string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// sameVersion reports whether entry e describes fields in live's
// apiVersion. An entry records paths in the version its manager wrote
// (the HCO serves v1beta1 and v1, shaped differently); paths of another
// version cannot be read as this one's. Callers treat such entries as
// saying nothing, which is the safe reading for them: a masked field is
// then adopted (kept), and no field counts as dropped.
func sameVersion(e metav1.ManagedFieldsEntry, live *unstructured.Unstructured) bool {
	return e.APIVersion == "" || e.APIVersion == live.GetAPIVersion()
}

// Owners returns the managers other than self owning the field at p (or
// part of it) in live, sorted, from the entries of live's apiVersion.
func Owners(live *unstructured.Unstructured, p jsonpointer.Pointer, self string) []string {
	seen := map[string]bool{}
	for _, e := range live.GetManagedFields() {
		if (e.Manager == self && e.Operation == metav1.ManagedFieldsOperationApply) || !sameVersion(e, live) {
			continue
		}
		set := decode(e.FieldsV1)
		if set != nil && owns(set, live.Object, p) {
			seen[e.Manager] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func decode(f *metav1.FieldsV1) map[string]any {
	if f == nil {
		return nil
	}
	raw := f.GetRawBytes()
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// owns walks a fieldsV1 set along p, resolving list indexes through the live
// value. An empty set node is a leaf: its owner owns everything below it.
func owns(set map[string]any, live any, p jsonpointer.Pointer) bool {
	node, cur := set, live
	for _, tok := range p {
		if len(node) == 0 {
			return true
		}
		var key string
		switch c := cur.(type) {
		case map[string]any:
			key = "f:" + tok
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			key = listKey(node, c[i])
			cur = c[i]
		default:
			return false
		}
		child, ok := node[key].(map[string]any)
		if !ok {
			return false
		}
		node = child
	}
	return true
}

// listKey finds the set key naming elem: "v:<json>" for sets of scalars,
// "k:{...}" for associative lists (every key field equal to elem's).
func listKey(node map[string]any, elem any) string {
	if b, err := json.Marshal(elem); err == nil {
		if _, ok := node["v:"+string(b)]; ok {
			return "v:" + string(b)
		}
	}
	m, _ := elem.(map[string]any)
	for k := range node {
		if !strings.HasPrefix(k, "k:") {
			continue
		}
		var keys map[string]any
		if json.Unmarshal([]byte(k[2:]), &keys) != nil {
			continue
		}
		match := m != nil
		for kf, kv := range keys {
			if !jsonEqual(m[kf], kv) {
				match = false
				break
			}
		}
		if match {
			return k
		}
	}
	return ""
}

// Dropped lists the fields manager owns on live (from its Apply entry) that
// desired no longer sets: applying desired would delete them (unless another
// manager co-owns them), so they count as drift.
func Dropped(live *unstructured.Unstructured, desired map[string]any, manager string) []string {
	var out []string
	for _, e := range live.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || !sameVersion(e, live) {
			continue
		}
		if set := decode(e.FieldsV1); set != nil {
			dropped(set, desired, nil, &out)
		}
	}
	sort.Strings(out)
	return out
}

func dropped(set map[string]any, desired any, at jsonpointer.Pointer, out *[]string) {
	for k, v := range set {
		child, _ := v.(map[string]any)
		switch {
		case k == ".":
			continue
		case strings.HasPrefix(k, "f:"):
			name := k[2:]
			if at.HasPrefix(jsonpointer.Pointer{"metadata"}) && len(at) == 1 && (name == "name" || name == "namespace") {
				continue
			}
			m, _ := desired.(map[string]any)
			dv, ok := m[name]
			p := append(append(jsonpointer.Pointer{}, at...), name)
			if !ok {
				*out = append(*out, p.String())
				continue
			}
			if len(child) > 0 {
				dropped(child, dv, p, out)
			}
		case strings.HasPrefix(k, "k:") || strings.HasPrefix(k, "v:"):
			list, _ := desired.([]any)
			idx := -1
			for i, elem := range list {
				if listKey(map[string]any{k: nil}, elem) == k {
					idx = i
					break
				}
			}
			p := append(append(jsonpointer.Pointer{}, at...), k)
			if idx < 0 {
				*out = append(*out, p.String())
				continue
			}
			if len(child) > 0 {
				dropped(child, list[idx], append(append(jsonpointer.Pointer{}, at...), strconv.Itoa(idx)), out)
			}
		}
	}
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
