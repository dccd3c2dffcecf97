// Package drift decides locally, from the cached live object, whether
// applying a desired state could change anything.
//
// The verdict follows how server-side apply merges, read from the kind's
// structure (pkg/structure): in granular maps and lists every field desired
// sets must hold the same value live, and fields others added do not count;
// atomic maps and lists must be equal as a whole, because apply replaces
// them. Fields the autopilot owns but no longer sets count, because apply
// would delete them; fields it sets but no longer owns count (another
// manager took them over), because their new owner could remove them. Empty values ({}, [], false, 0) are values. A
// suspected drift that is not certain is confirmed by a server-side
// dry-run before anything is written.
package drift

import (
	"math"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// Diff lists the JSON pointers where live differs from desired; empty means
// in sync. manager names the field manager whose dropped fields count; st
// is the kind's structure (zero: unknown, compared leniently).
func Diff(desired, live *unstructured.Unstructured, manager string, st structure.Structure) []string {
	c := compare{st: st}
	c.subset(desired.Object, live.Object, nil, nil)
	out := append(c.out, managedfields.Dropped(live, desired.Object, manager)...)
	out = append(out, managedfields.Unowned(live, desired.Object, manager)...)
	sort.Strings(out)
	return dedup(out)
}

// dedup drops repeated entries of a sorted list.
func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

type compare struct {
	st  structure.Structure
	out []string
}

// skip: status is never applied.
var skip = map[string]bool{"/status": true}

// subset walks want against got; at is the object path, sp the schema path
// (list elements and map values of additionalProperties as structure.Item
// where the schema says so).
func (c *compare) subset(want, got any, at, sp jsonpointer.Pointer) {
	if skip[at.String()] {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			c.out = append(c.out, at.String())
			return
		}
		if c.st.AtomicMap(sp) {
			if !Equal(w, g) {
				c.out = append(c.out, at.String())
			}
			return
		}
		for k, wv := range w {
			p := child(at, k)
			gv, ok := g[k]
			if !ok {
				if wv == nil {
					continue // applying null sets nothing
				}
				c.out = append(c.out, p.String())
				continue
			}
			c.subset(wv, gv, p, c.st.Key(sp, k))
		}
	case []any:
		g, ok := got.([]any)
		if keys, granular := c.st.ListKeys(sp); granular && ok {
			// Merged element by element: find each desired element by
			// its key (or value, in a set); others' elements do not count.
			for i, we := range w {
				j := Find(g, we, keys)
				if j < 0 {
					c.out = append(c.out, child(at, strconv.Itoa(i)).String())
					continue
				}
				c.subset(we, g[j], child(at, strconv.Itoa(j)), child(sp, structure.Item))
			}
			return
		}
		if !ok || len(g) != len(w) {
			c.out = append(c.out, at.String())
			return
		}
		if c.st.AtomicList(sp) {
			if !Equal(w, g) {
				c.out = append(c.out, at.String())
			}
			return
		}
		for i := range w {
			c.subset(w[i], g[i], child(at, strconv.Itoa(i)), child(sp, structure.Item))
		}
	default:
		if !scalarEqual(w, got) {
			c.out = append(c.out, at.String())
		}
	}
}

func child(p jsonpointer.Pointer, tok string) jsonpointer.Pointer { return structure.Child(p, tok) }

// Find returns the index in list of the element matching elem: equal key
// fields (a list-type map), or an equal value (a set, no keys); -1 if none.
func Find(list []any, elem any, keys []string) int {
	for i, v := range list {
		if len(keys) == 0 {
			if Equal(v, elem) {
				return i
			}
			continue
		}
		vm, ok1 := v.(map[string]any)
		em, ok2 := elem.(map[string]any)
		if !ok1 || !ok2 {
			continue
		}
		match := true
		for _, k := range keys {
			if !Equal(vm[k], em[k]) {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// Equal compares two JSON values exactly, numbers by value (the API server
// may hand back int64 or float64 for the same number).
func Equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return scalarEqual(a, b)
}

// scalarEqual treats int64 and float64 holding the same number as equal.
func scalarEqual(a, b any) bool {
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum && bNum {
		return fa == fb || math.Abs(fa-fb) < 1e-9
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
