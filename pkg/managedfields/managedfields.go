// Package managedfields answers ownership questions from an object's
// server-side apply managedFields: who owns a field, whether the autopilot
// ever applied the object, and which of its owned fields a new desired state
// would drop (which apply would delete).
//
// Field sets are decoded with structured-merge-diff's fieldpath, the
// server's own representation, and read per entry and per apiVersion.
package managedfields

import (
	"bytes"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

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

// decode reads an entry's field set; nil when it has none or it is malformed.
func decode(e metav1.ManagedFieldsEntry) *fieldpath.Set {
	if e.FieldsV1 == nil || len(e.FieldsV1.GetRawBytes()) == 0 {
		return nil
	}
	s := &fieldpath.Set{}
	if s.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())) != nil {
		return nil
	}
	return s
}

// Owners returns the managers other than self owning the field at p (or
// part of it, or an atomic value containing it) in live, sorted, from the
// entries of live's apiVersion.
func Owners(live *unstructured.Unstructured, p jsonpointer.Pointer, self string) []string {
	return owners(live, p, self, false)
}

// WholeOwners returns the managers other than self owning all of the
// field at p: p itself or an atomic value containing it, not just a part.
func WholeOwners(live *unstructured.Unstructured, p jsonpointer.Pointer, self string) []string {
	return owners(live, p, self, true)
}

// Holds reports whether manager's Apply entry (in live's apiVersion) owns
// the whole field at p in live: the value there is still the one manager
// last applied, since a change by anyone else (an update, a forced apply,
// a removal) takes the field out of manager's set.
func Holds(live *unstructured.Unstructured, p jsonpointer.Pointer, manager string) bool {
	for _, e := range live.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && sameVersion(e, live) {
			set := decode(e)
			return set != nil && owns(set, live.Object, p, true)
		}
	}
	return false
}

func owners(live *unstructured.Unstructured, p jsonpointer.Pointer, self string, whole bool) []string {
	seen := map[string]bool{}
	for _, e := range live.GetManagedFields() {
		if (e.Manager == self && e.Operation == metav1.ManagedFieldsOperationApply) || !sameVersion(e, live) {
			continue
		}
		if set := decode(e); set != nil && owns(set, live.Object, p, whole) {
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

// owns walks set along p, resolving list elements through the live value.
// A member without children met on the way is a leaf owning everything
// below it (an atomic value); a member with children (a list item's "."
// entry) owns only the item's existence. Reaching the end of p inside the
// set means part of the field is owned.
func owns(set *fieldpath.Set, live any, p jsonpointer.Pointer, whole bool) bool {
	node, cur := set, live
	for _, tok := range p {
		pe, next, ok := element(node, cur, tok)
		if !ok {
			return false
		}
		child, hasChildren := node.Children.Get(pe)
		if node.Members.Has(pe) && !hasChildren {
			return true // a leaf: the whole value
		}
		if !hasChildren {
			return false
		}
		node, cur = child, next
	}
	return !whole && !node.Empty()
}

// element finds the path element naming token tok of cur in node: a field
// name in a map; in a list, the key, value or index element the set uses
// for that list item.
func element(node *fieldpath.Set, cur any, tok string) (fieldpath.PathElement, any, bool) {
	switch c := cur.(type) {
	case map[string]any:
		return fieldpath.PathElement{FieldName: &tok}, c[tok], true
	case []any:
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(c) {
			return fieldpath.PathElement{}, nil, false
		}
		pe, ok := listElement(node, c[i], i)
		return pe, c[i], ok
	}
	return fieldpath.PathElement{}, nil, false
}

// listElement returns the element of node naming list item elem (at index i).
func listElement(node *fieldpath.Set, elem any, i int) (fieldpath.PathElement, bool) {
	var found fieldpath.PathElement
	ok := false
	match := func(pe fieldpath.PathElement) {
		if !ok && matches(pe, elem, i) {
			found, ok = pe, true
		}
	}
	node.Members.Iterate(match)
	node.Children.Iterate(match)
	return found, ok
}

// matches reports whether path element pe names list item elem at index i.
func matches(pe fieldpath.PathElement, elem any, i int) bool {
	switch {
	case pe.Key != nil:
		m, isMap := elem.(map[string]any)
		if !isMap {
			return false
		}
		for _, f := range *pe.Key {
			v, has := m[f.Name]
			if !has || !value.Equals(f.Value, value.NewValueInterface(v)) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(*pe.Value, value.NewValueInterface(elem))
	case pe.Index != nil:
		return *pe.Index == i
	}
	return false
}

// Dropped lists the fields manager owns on live (from its Apply entry in
// live's apiVersion) that desired no longer sets: applying desired would
// delete them (unless another manager co-owns them), so they count as
// drift. Each is reported once, at the highest path desired lacks; list
// items as key selectors ("name=x") where the list is keyed.
func Dropped(live *unstructured.Unstructured, desired map[string]any, manager string) []string {
	seen := map[string]bool{}
	for _, e := range live.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || !sameVersion(e, live) {
			continue
		}
		set := decode(e)
		if set == nil {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if missing, ok := firstMissing(desired, p); ok {
				seen[missing] = true
			}
		})
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// firstMissing walks p through desired and returns the pointer of the
// first element desired lacks (false when desired has all of p). The
// object's name and namespace are identity, never dropped.
func firstMissing(desired map[string]any, p fieldpath.Path) (string, bool) {
	if len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "metadata" && p[1].FieldName != nil &&
		(*p[1].FieldName == "name" || *p[1].FieldName == "namespace") {
		return "", false
	}
	var at jsonpointer.Pointer
	var cur any = desired
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return at.String(), true
			}
			at = append(at, *pe.FieldName)
			v, has := c[*pe.FieldName]
			if !has {
				return at.String(), true
			}
			cur = v
		case []any:
			idx := -1
			for i, elem := range c {
				if matches(pe, elem, i) {
					idx = i
					break
				}
			}
			at = append(at, token(pe))
			if idx < 0 {
				return at.String(), true
			}
			at[len(at)-1] = strconv.Itoa(idx)
			cur = c[idx]
		default:
			return at.String(), true
		}
	}
	return "", false
}

// token renders a list path element as an ignore-fields style token.
func token(pe fieldpath.PathElement) string {
	switch {
	case pe.Key != nil:
		s := ""
		for i, f := range *pe.Key {
			if i > 0 {
				s += "&"
			}
			v := value.ToString(f.Value)
			if f.Value.IsString() {
				v = f.Value.AsString()
			}
			s += f.Name + "=" + v
		}
		return s
	case pe.Index != nil:
		return strconv.Itoa(*pe.Index)
	}
	return pe.String()
}

// Unowned lists the fields desired sets that manager's Apply entry (in
// live's apiVersion) does not own and another manager owns whole: someone
// took them over (a forced apply, an update), so the autopilot no longer
// holds them even where the value still matches, and their new owner could
// remove them. Applying takes them back. Fields nobody owns (a server
// default a mask adopted) are not reported: no one can remove them. Nil
// when manager never applied live. Identity is skipped.
func Unowned(live *unstructured.Unstructured, desired map[string]any, manager string) []string {
	var set *fieldpath.Set
	for _, e := range live.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && sameVersion(e, live) {
			set = decode(e)
			break
		}
	}
	if set == nil {
		return nil
	}
	var candidates []string
	for k, v := range desired {
		if k == "apiVersion" || k == "kind" {
			continue
		}
		unowned(set, k, v, jsonpointer.Pointer{k}, &candidates)
	}
	var out []string
	for _, c := range candidates {
		p, err := jsonpointer.Parse(c)
		if err == nil && len(WholeOwners(live, p, manager)) > 0 {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// unowned checks the value v of map key k (at pointer at) against node.
func unowned(node *fieldpath.Set, k string, v any, at jsonpointer.Pointer, out *[]string) {
	if v == nil || (len(at) == 2 && at[0] == "metadata" && (k == "name" || k == "namespace")) {
		return
	}
	pe := fieldpath.PathElement{FieldName: &k}
	child, hasChildren := node.Children.Get(pe)
	switch {
	case hasChildren:
		walkUnowned(child, v, at, out)
	case !node.Members.Has(pe):
		*out = append(*out, at.String())
	}
}

func walkUnowned(node *fieldpath.Set, v any, at jsonpointer.Pointer, out *[]string) {
	switch c := v.(type) {
	case map[string]any:
		for k, cv := range c {
			unowned(node, k, cv, append(append(jsonpointer.Pointer{}, at...), k), out)
		}
	case []any:
		for i, elem := range c {
			p := append(append(jsonpointer.Pointer{}, at...), strconv.Itoa(i))
			pe, ok := listElement(node, elem, i)
			if !ok {
				*out = append(*out, p.String())
				continue
			}
			if child, hasChildren := node.Children.Get(pe); hasChildren {
				walkUnowned(child, elem, p, out)
			}
		}
	}
}
