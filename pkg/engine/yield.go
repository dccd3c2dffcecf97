package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/overrides"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// yieldTo leaves to their owners the fields of desired that a manager the
// HCO declares authoritative (platform.kubevirt.io/yield-to, or its
// default list) owns on live: they are masked out of desired as an
// ignore-fields pointer would be, so the apply neither forces nor counts
// them, and the autopilot releases any share of them it held. It returns
// them. A declaration not understood still yields
// to the defaults and every entry understood (annotations.ParseYieldTo).
func yieldTo(desired, live *unstructured.Unstructured, rc *rendercontext.RenderContext, st structure.Structure) []Deferral {
	v, ok := rc.HCOAnnotation(annotations.YieldTo)
	y, _ := annotations.ParseYieldTo(v, ok)
	if y.Empty() {
		return nil
	}
	held := managedfields.HeldBy(live, desired.Object, y.Has, annotations.FieldManager, ownKey)
	if len(held) == 0 {
		return nil
	}
	ptrs := make([]jsonpointer.Pointer, len(held))
	out := make([]Deferral, len(held))
	for i, h := range held {
		ptrs[i] = h.Pointer
		out[i] = Deferral{Field: h.Pointer.String(), Managers: h.Managers}
	}
	overrides.Mask(desired, live, ptrs, annotations.FieldManager, st)
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
