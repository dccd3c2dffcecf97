// Package drift decides locally, from the cached live object, whether
// applying a desired state could change anything.
//
// The verdict is a subset compare: every field desired sets must hold the
// same value live. Server defaults and other managers' fields are not in
// desired, so they never count. Fields the autopilot owns but no longer sets
// count, because apply would delete them. The compare is deliberately
// conservative; a suspected drift is confirmed by a server-side dry-run
// before anything is written.
package drift

import (
	"fmt"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
)

// Diff lists the JSON pointers where live differs from desired; empty means
// in sync. manager names the field manager whose dropped fields count.
func Diff(desired, live *unstructured.Unstructured, manager string) []string {
	var out []string
	subset(desired.Object, live.Object, nil, &out)
	out = append(out, managedfields.Dropped(live, desired.Object, manager)...)
	sort.Strings(out)
	return out
}

// server-maintained metadata never appears in a rendered object; skip it anyway.
var skip = map[string]bool{"/status": true}

func subset(want, got any, at jsonpointer.Pointer, out *[]string) {
	if skip[at.String()] {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, at.String())
			return
		}
		for k, wv := range w {
			p := append(append(jsonpointer.Pointer{}, at...), k)
			gv, ok := g[k]
			if !ok {
				if isEmpty(wv) {
					continue // apply of an empty map or null sets nothing
				}
				*out = append(*out, p.String())
				continue
			}
			subset(wv, gv, p, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok && got == nil && len(w) == 0 {
			return
		}
		if !ok || len(g) != len(w) {
			*out = append(*out, at.String())
			return
		}
		for i := range w {
			subset(w[i], g[i], append(append(jsonpointer.Pointer{}, at...), fmt.Sprint(i)), out)
		}
	default:
		if !scalarEqual(w, got) {
			*out = append(*out, at.String())
		}
	}
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

// scalarEqual treats int64 and float64 holding the same number as equal:
// the API server may hand back either form.
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
