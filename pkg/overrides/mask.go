package overrides

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

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
			m.keep(dp, lp, v, m.elementKeys(lp)...)
		}
	}
	return unresolved
}

// elementKeys returns the key fields when lp addresses an element of a list
// merged by key: a kept element always keeps its keys, or it would be sent
// without an identity.
func (m *masker) elementKeys(lp jsonpointer.Pointer) []string {
	if len(lp) == 0 || !isIndex(lp[len(lp)-1]) {
		return nil
	}
	keys, granular := m.st.ListKeys(m.st.Path(m.live.Object, lp[:len(lp)-1]))
	if !granular {
		return nil
	}
	return keys
}

type masker struct {
	desired, live *unstructured.Unstructured
	self          string
	st            structure.Structure
}

// keep makes desired at dp hold live's state at lp (value lv). keys are
// the key fields of a list-map element being kept: they identify it and
// are never dropped.
func (m *masker) keep(dp, lp jsonpointer.Pointer, lv any, keys ...string) {
	sp := m.st.Path(m.live.Object, lp)
	switch l := lv.(type) {
	case map[string]any:
		if m.st.AtomicMap(sp) {
			break
		}
		dv, _ := jsonpointer.Get(m.desired.Object, dp)
		dm, isMap := dv.(map[string]any)
		if !isMap {
			dm = map[string]any{}
			_ = jsonpointer.Set(m.desired.Object, dp, dm)
		}
		for k := range dm {
			if _, ok := l[k]; !ok {
				delete(dm, k) // absent live
			}
		}
		for k, v := range l {
			if slices.Contains(keys, k) {
				dm[k] = runtime.DeepCopyJSONValue(v)
				continue
			}
			m.keep(structure.Child(dp, k), structure.Child(lp, k), v)
		}
		return
	case []any:
		if listKeys, granular := m.st.ListKeys(sp); granular {
			m.keepGranular(dp, lp, l, listKeys)
			return
		}
		if !m.st.Known {
			// Atomic or not, unknown: adopting the whole live list keeps
			// every element, whoever owns it.
			_ = jsonpointer.Set(m.desired.Object, dp, runtime.DeepCopyJSONValue(lv))
			return
		}
	}
	if !m.st.InsideAtomic(m.live.Object, lp) && len(managedfields.Owners(m.live, lp, m.self)) > 0 {
		jsonpointer.Delete(m.desired.Object, dp)
		return
	}
	_ = jsonpointer.Set(m.desired.Object, dp, runtime.DeepCopyJSONValue(lv))
}

// keepGranular keeps a list merged element by element: desired's elements
// absent live are dropped, the others kept element by element; elements
// only live has are not ours to send (apply leaves them alone).
func (m *masker) keepGranular(dp, lp jsonpointer.Pointer, live []any, keys []string) {
	dv, _ := jsonpointer.Get(m.desired.Object, dp)
	dl, _ := dv.([]any)
	kept := make([]any, 0, len(dl))
	for _, de := range dl {
		if drift.Find(live, de, keys) >= 0 {
			kept = append(kept, de)
		}
	}
	if dl != nil {
		_ = jsonpointer.Set(m.desired.Object, dp, kept)
	}
	for i, de := range kept {
		j := drift.Find(live, de, keys)
		m.keep(structure.Child(dp, strconv.Itoa(i)), structure.Child(lp, strconv.Itoa(j)), live[j], keys...)
	}
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
