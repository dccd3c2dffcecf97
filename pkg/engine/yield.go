package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// yieldTo leaves to their owners the fields of desired that a manager the
// HCO declares authoritative (platform.kubevirt.io/yield-to, or its
// default list) owns on live: they are removed from desired, each at the
// owner's leaf, so the apply neither forces nor counts them, and the
// autopilot releases any share of them it held (never adopting the
// owner's value, which would make it a co-owner). It returns them. A
// declaration not understood still yields
// to the defaults and every entry understood (annotations.ParseYieldTo).
func yieldTo(desired, live *unstructured.Unstructured, rc *rendercontext.RenderContext) []Deferral {
	v, ok := rc.HCOAnnotation(annotations.YieldTo)
	y, _ := annotations.ParseYieldTo(v, ok)
	if y.Empty() {
		return nil
	}
	held := managedfields.HeldBy(live, desired.Object, y.Has, annotations.FieldManager, ownKey)
	if len(held) == 0 {
		return nil
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
