package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// yieldTo leaves to their owners the fields of desired that a manager the
// HCO declares authoritative (platform.kubevirt.io/yield-to, or its
// default list) owns on live: they are removed from desired, each at the
// owner's leaf, so the apply neither forces nor counts them, and the
// autopilot releases any share of them it held (never adopting the
// owner's value, which would make it a co-owner). It returns them. A
// declaration not understood still yields
// to the defaults and every entry understood (annotations.ParseYieldTo).
//
// unreadable is set when a declared owner recorded its fields in another
// apiVersion of the kind, whose paths cannot be read as this one's: then
// nothing of the object can be told to be the autopilot's, and it is kept
// as it is (never forced).
func yieldTo(desired, live *unstructured.Unstructured, rc *rendercontext.RenderContext, st structure.Structure) (deferred []Deferral, unreadable string) {
	v, ok := rc.HCOAnnotation(annotations.YieldTo)
	y, _ := annotations.ParseYieldTo(v, ok)
	if y.Empty() {
		return nil, ""
	}
	if others := managedfields.OtherVersions(live, y.Has, annotations.FieldManager); len(others) > 0 {
		return nil, fmt.Sprintf("its declared owners (%s: %s) recorded their fields in another apiVersion than %s, which cannot be read as this one's; "+
			"it is kept as it is, never forced, until they apply it as %s or are removed from %s", annotations.YieldTo, strings.Join(others, ", "), live.GetAPIVersion(), live.GetAPIVersion(), annotations.YieldTo)
	}
	atomicMap := func(p jsonpointer.Pointer) bool { return st.AtomicMap(st.Path(live.Object, p)) }
	held := managedfields.HeldBy(live, desired.Object, y.Has, annotations.FieldManager, ownKey, atomicMap)
	if len(held) == 0 {
		return nil, ""
	}
	out := make([]Deferral, len(held))
	for i, h := range held {
		// Leaves are fields or whole lists, never list items, so no
		// deletion shifts another's index.
		if dp, ok := jsonpointer.Resolve(desired.Object, h.Pointer); ok {
			jsonpointer.Delete(desired.Object, dp)
		}
		out[i] = Deferral{Field: h.Pointer.String(), Managers: h.Managers}
	}
	return out, ""
}

// withLive is desired with live's values at the deferred fields: the
// object as it will be once applied, for the checks that judge it.
func withLive(desired, live *unstructured.Unstructured, deferred []Deferral) *unstructured.Unstructured {
	if len(deferred) == 0 {
		return desired
	}
	out := desired.DeepCopy()
	for _, d := range deferred {
		p, err := jsonpointer.Parse(d.Field)
		if err != nil {
			continue
		}
		lp, ok := jsonpointer.Resolve(live.Object, p)
		if !ok {
			continue
		}
		v, _ := jsonpointer.Get(live.Object, lp)
		if dp, ok := jsonpointer.Resolve(out.Object, p); ok {
			_ = jsonpointer.Set(out.Object, dp, runtime.DeepCopyJSONValue(v))
		} else if !jsonpointer.KeySelector(p[len(p)-1]) {
			_ = jsonpointer.Set(out.Object, p, runtime.DeepCopyJSONValue(v))
		}
	}
	return out
}

// ownKey reports whether p is one of the autopilot's own metadata keys
// (its label and platform.kubevirt.io/ annotations): never yielded.
func ownKey(p jsonpointer.Pointer) bool {
	if len(p) != 3 || p[0] != "metadata" {
		return false
	}
	return (p[1] == "labels" && p[2] == annotations.ManagedByLabel) ||
		(p[1] == "annotations" && strings.HasPrefix(p[2], annotations.SwitchPrefix))
}
