package engine

import (
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ConditionsHold reports whether every condition of a holds in rc; if not,
// which one failed first, and whether any failing condition is a person's
// intent (an HCO annotation, feature gate or field) rather than a derived
// fact (hardware, topology). Only a change of intent removes objects: a
// derived fact can flicker (an NFD upgrade, a drained node).
func ConditionsHold(a *catalog.Asset, rc *rendercontext.RenderContext) (ok bool, why string, intentOff bool) {
	ok = true
	for _, c := range a.Conditions {
		if conditionHolds(c, rc) {
			continue
		}
		if ok {
			why = "condition not met: " + c.String()
		}
		ok = false
		if Intent(c) && !intentOff {
			intentOff = true
			why = "condition not met: " + c.String()
		}
	}
	return ok, why, intentOff
}

// Intent reports whether c expresses a person's choice (read from the HCO)
// rather than a fact derived from the cluster.
func Intent(c catalog.Condition) bool {
	switch c.Type {
	case catalog.CondAnnotation, catalog.CondFeatureGate, catalog.CondHCOFieldUnconfigured:
		return true
	}
	return false
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
	case catalog.CondImage:
		return rc.Image(c.Name) != ""
	case catalog.CondStorageClass:
		if v, _ := rc.HCOAnnotation(c.Key); c.Key != "" && strings.TrimSpace(v) != "" {
			return true
		}
		access, mode := c.Access()
		return len(rc.StorageClassesOffering(access, mode)) > 0
	}
	return false
}

// Waiting returns the condition that keeps an otherwise active asset
// waiting: every other condition holds, a dependency (an operand image, a
// storage class) is not there yet. The asset is then a missing dependency,
// not inactive.
func Waiting(a *catalog.Asset, rc *rendercontext.RenderContext) (catalog.Condition, bool) {
	var missing *catalog.Condition
	for i, c := range a.Conditions {
		if conditionHolds(c, rc) {
			continue
		}
		if !c.Waits() {
			return catalog.Condition{}, false
		}
		if missing == nil {
			missing = &a.Conditions[i]
		}
	}
	if missing == nil {
		return catalog.Condition{}, false
	}
	return *missing, true
}
