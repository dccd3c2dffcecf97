package overrides

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// ParseIgnoreFields decodes the comma-separated pointer list. In a list, a
// token "key=value" addresses the element by key ("/spec/featureGates/
// name=CPUManager/state"), which survives reordering; an index addresses a
// position.
func ParseIgnoreFields(value string) ([]jsonpointer.Pointer, error) {
	var out []jsonpointer.Pointer
	for _, raw := range strings.Split(value, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		p, err := jsonpointer.Parse(s)
		if err != nil {
			return nil, err
		}
		if err := checkProtected(p, "pointer "+s); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Mask makes desired keep live's state under every pointer, leaf by leaf,
// so applying it never changes or removes a value there, whoever owns it.
// Server-side apply deletes fields a manager stops sending unless another
// manager co-owns them, so for each leaf (a scalar, or a list or map the
// server replaces whole) under a pointer:
//   - absent on live: dropped from desired (the live state is "absent");
//   - owned by another manager: dropped from desired, so the autopilot
//     releases it and never co-owns a user's field; its owner keeps it;
//   - otherwise (only the autopilot, or nobody, owns it, or it sits inside
//     an atomic list or map the autopilot applies whole): the live value
//     is adopted.
//
// Maps are walked into, so editing one child of a masked map keeps the
// autopilot's other children as they are live. The decision reads the live
// object each time, so it survives restarts. Mask never creates a list
// element by key and never fails: pointers that resolve neither live nor
// in desired are returned as unresolved, to be reported.
func Mask(desired, live *unstructured.Unstructured, pointers []jsonpointer.Pointer, self string, st structure.Structure) (unresolved []string) {
	m := masker{desired: desired, live: live, self: self, st: st}
	for _, p := range pointers {
		lp, inLive := jsonpointer.Resolve(live.Object, p)
		dp, inDesired := jsonpointer.Resolve(desired.Object, p)
		switch {
		case !inLive && !inDesired:
			unresolved = append(unresolved, p.String())
		case !inLive:
			jsonpointer.Delete(desired.Object, dp)
		default:
			if !inDesired {
				var ok bool
				if dp, ok = m.placeFor(p, lp); !ok {
					continue // inside an element desired does not have: not ours
				}
			}
			v, _ := jsonpointer.Get(live.Object, lp)
			m.keep(dp, lp, v)
		}
	}
	return unresolved
}

type masker struct {
	desired, live *unstructured.Unstructured
	self          string
	st            structure.Structure
}

// keep makes desired at dp hold live's state at lp (value lv).
func (m *masker) keep(dp, lp jsonpointer.Pointer, lv any) {
	if lm, ok := lv.(map[string]any); ok && !m.atomicMapAt(lp) {
		dv, _ := jsonpointer.Get(m.desired.Object, dp)
		dm, isMap := dv.(map[string]any)
		if !isMap {
			dm = map[string]any{}
			_ = jsonpointer.Set(m.desired.Object, dp, dm)
		}
		for k := range dm {
			if _, ok := lm[k]; !ok {
				delete(dm, k) // absent live
			}
		}
		for k, v := range lm {
			m.keep(structure.Child(dp, k), structure.Child(lp, k), v)
		}
		return
	}
	if !m.st.InsideAtomic(m.live.Object, lp) && len(managedfields.Owners(m.live, lp, m.self)) > 0 {
		jsonpointer.Delete(m.desired.Object, dp)
		return
	}
	_ = jsonpointer.Set(m.desired.Object, dp, runtime.DeepCopyJSONValue(lv))
}

func (m *masker) atomicMapAt(lp jsonpointer.Pointer) bool {
	if !m.st.Known {
		return false
	}
	var sp jsonpointer.Pointer
	cur := any(m.live.Object)
	for _, tok := range lp {
		switch c := cur.(type) {
		case map[string]any:
			sp, cur = m.st.Key(sp, tok), c[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			if i < 0 || i >= len(c) {
				return false
			}
			sp, cur = structure.Child(sp, structure.Item), c[i]
		}
	}
	return m.st.AtomicMap(sp)
}

// placeFor finds where in desired the live location lp (pointer p) goes
// when desired does not have it: missing maps are fine (Set creates them);
// a list element must exist in desired, except that one more element of
// an atomic list, right after desired's last, keeps the live list's shape.
func (m *masker) placeFor(p, lp jsonpointer.Pointer) (jsonpointer.Pointer, bool) {
	out := make(jsonpointer.Pointer, 0, len(lp))
	var cur any = m.desired.Object
	for i, tok := range lp {
		switch c := cur.(type) {
		case nil:
			if jsonpointer.KeySelector(p[i]) || isIndex(tok) {
				return nil, false
			}
			out = append(out, tok)
		case map[string]any:
			out, cur = append(out, tok), c[tok]
		case []any:
			if jsonpointer.KeySelector(p[i]) {
				j, ok := jsonpointer.Resolve(c, jsonpointer.Pointer{p[i]})
				if !ok {
					return nil, false
				}
				idx, _ := strconv.Atoi(j[0])
				out, cur = append(out, j[0]), c[idx]
				continue
			}
			idx, _ := strconv.Atoi(tok)
			switch {
			case idx < len(c):
				out, cur = append(out, tok), c[idx]
			case idx == len(c) && i == len(lp)-1 && m.st.InsideAtomic(m.live.Object, lp):
				parent := append(jsonpointer.Pointer{}, out...)
				_ = jsonpointer.Set(m.desired.Object, parent, append(c, nil))
				return append(out, tok), true
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return out, true
}

func isIndex(tok string) bool {
	_, err := strconv.Atoi(tok)
	return err == nil
}

// checkProtected refuses a pointer that is, contains or lies inside a
// protected path.
func checkProtected(p jsonpointer.Pointer, what string) error {
	for _, q := range protected {
		if p.HasPrefix(q) || q.HasPrefix(p) {
			return fmt.Errorf("%s covers the object's identity, status or server metadata (%s): %w", what, q, ErrProtected)
		}
	}
	return nil
}
