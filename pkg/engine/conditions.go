package engine

import (
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ConditionsHold reports whether every condition of a holds in rc, and if
// not, which one failed.
func ConditionsHold(a *catalog.Asset, rc *rendercontext.RenderContext) (bool, string) {
	for _, c := range a.Conditions {
		if !conditionHolds(c, rc) {
			return false, "condition not met: " + c.String()
		}
	}
	return true, ""
}

func conditionHolds(c catalog.Condition, rc *rendercontext.RenderContext) bool {
	switch c.Type {
	case catalog.CondAnnotation:
		v, ok := rc.HCOAnnotation(c.Key)
		if c.Value == nil || *c.Value == "" {
			return ok
		}
		return ok && v == *c.Value
	case catalog.CondFeatureGate:
		return rc.FeatureGateEnabled(c.Name)
	case catalog.CondHardware:
		v, _ := rc.Hardware.Detected(c.Detector)
		return v
	case catalog.CondHCOFieldUnconfigured:
		return rc.HCOFieldUnconfigured(c.Path)
	case catalog.CondTopology:
		v, _ := rc.Topology.Bool(c.Field)
		return v == c.WantBool()
	}
	return false
}
