package managedfields

import (
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// Held is a field of the desired state that other managers own on the
// live object.
type Held struct {
	Pointer  jsonpointer.Pointer
	Managers []string
}

// HeldBy lists the fields desired sets that a manager accepted by yield
// (never self) owns in live, by any operation (apply or update): each at
// the owner's leaf (a scalar, an atomic list, or a map atomicMap says is
// atomic), list items by key where keyed, sorted. A granular map the owner
// only created, and an item of a set-like list, are never held: the other
// fields of the map, and the other items, are not the owner's, and
// withholding the whole would make the server delete them. Identity
// (apiVersion, kind, name, namespace) and the metadata keys keep says are
// the caller's own are never held. A live object without such a manager
// costs no decoding.
func HeldBy(live *unstructured.Unstructured, desired map[string]any, yield func(manager string) bool, self string, keep, atomicMap func(jsonpointer.Pointer) bool) []Held {
	var entries []metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if e.Manager != self && yield(e.Manager) && sameVersion(e, live) {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	owners := map[string]map[string]bool{}
	ptrs := map[string]jsonpointer.Pointer{}
	for _, e := range entries {
		set := decode(e)
		if set == nil {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if hasChildren(set, p) || keyField(p) {
				// A list item's existence ("."), or its key: the item's
				// fields decide, and a key stays with its item.
				return
			}
			ptr, ok := livePointer(live.Object, p)
			if !ok || len(ptr) == 0 || identity(ptr) || (keep != nil && keep(ptr)) {
				return
			}
			if v, _ := jsonpointer.Get(live.Object, ptr); isMap(v) && (atomicMap == nil || !atomicMap(ptr)) {
				return
			}
			if _, inDesired := jsonpointer.Resolve(desired, ptr); !inDesired {
				return
			}
			k := ptr.String()
			if owners[k] == nil {
				owners[k] = map[string]bool{}
			}
			owners[k][e.Manager] = true
			ptrs[k] = ptr
		})
	}
	out := make([]Held, 0, len(owners))
	for k, ms := range owners {
		h := Held{Pointer: ptrs[k]}
		for m := range ms {
			h.Managers = append(h.Managers, m)
		}
		sort.Strings(h.Managers)
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer.String() < out[j].Pointer.String() })
	return out
}

// livePointer renders path p of a field set as a pointer into live: list
// items by key ("name=x") or index; an item of a set-like list (by value)
// stops at the list, which is then held whole.
func livePointer(live any, p fieldpath.Path) (jsonpointer.Pointer, bool) {
	var out jsonpointer.Pointer
	cur := live
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return nil, false
			}
			out = append(out, *pe.FieldName)
			cur = c[*pe.FieldName]
		case []any:
			if pe.Value != nil {
				return nil, false // an item of a set: no value conflicts
			}
			idx := -1
			for i, elem := range c {
				if matches(pe, elem, i) {
					idx = i
					break
				}
			}
			if idx < 0 {
				return nil, false
			}
			out = append(out, token(pe))
			cur = c[idx]
		default:
			return out, true
		}
	}
	return out, true
}

func identity(p jsonpointer.Pointer) bool {
	switch p[0] {
	case "apiVersion", "kind":
		return true
	case "metadata":
		return len(p) < 3 || (p[1] != "labels" && p[1] != "annotations")
	}
	return false
}

// keyField reports whether p ends at a key field of the list item it is
// in (every applier of an item owns its keys).
func keyField(p fieldpath.Path) bool {
	if len(p) < 2 || p[len(p)-1].FieldName == nil || p[len(p)-2].Key == nil {
		return false
	}
	for _, f := range *p[len(p)-2].Key {
		if f.Name == *p[len(p)-1].FieldName {
			return true
		}
	}
	return false
}

// hasChildren reports whether the set holds fields below p (p is then an
// item's existence, not a whole value).
func hasChildren(set *fieldpath.Set, p fieldpath.Path) bool {
	node := set
	for _, pe := range p {
		child, ok := node.Children.Get(pe)
		if !ok {
			return false
		}
		node = child
	}
	return !node.Empty()
}

func isMap(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// OtherVersions names the managers accepted by yield (never self) that
// recorded fields of live in another apiVersion than live's: their paths
// cannot be read as live's, so which fields they hold is unknown.
func OtherVersions(live *unstructured.Unstructured, yield func(manager string) bool, self string) []string {
	var out []string
	for _, e := range live.GetManagedFields() {
		if e.Manager != self && yield(e.Manager) && !sameVersion(e, live) && !slices.Contains(out, e.Manager) {
			out = append(out, e.Manager)
		}
	}
	sort.Strings(out)
	return out
}
