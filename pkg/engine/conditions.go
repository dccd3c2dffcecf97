package engine

import (
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ConditionsHold reports whether every condition of a holds in rc; if not,
// which one failed first, and whether any failing condition is a person's
// intent (an HCO annotation, feature gate or field) rather than a derived
// fact (hardware, topology). Only a change of intent removes objects: a
// derived fact can flicker (an NFD upgrade, a drained node).
//
// A condition whose input is not understood (a switch that is not a
// boolean: an *annotations.Invalid) or cannot be known (a pool's nodes
// cannot be told) is err: neither holding nor failing, so the asset is left
// exactly as it is.
func ConditionsHold(a *catalog.Asset, rc *rendercontext.RenderContext) (ok bool, why string, intentOff bool, err error) {
	ok = true
	for _, c := range a.Conditions {
		holds, cerr := conditionHolds(a, c, rc)
		if cerr != nil {
			return false, cerr.Error(), false, cerr
		}
		if holds {
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
	return ok, why, intentOff, nil
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

func conditionHolds(a *catalog.Asset, c catalog.Condition, rc *rendercontext.RenderContext) (bool, error) {
	switch c.Type {
	case catalog.CondAnnotation:
		v, ok := rc.HCOAnnotation(c.Key)
		if c.Value == nil || *c.Value == "" {
			return ok, nil
		}
		if want, err := annotations.ParseBool(c.Key, *c.Value); err == nil {
			// A switch: read with the one boolean vocabulary.
			on, err := annotations.ParseSwitch(c.Key, v, ok)
			return on == want, err
		}
		return ok && v == *c.Value, nil
	case catalog.CondFeatureGate:
		return rc.FeatureGateEnabled(c.Name), nil
	case catalog.CondHardware:
		// Read from the nodes of the pools the asset configures.
		h, err := rc.HardwareFor(a.Params)
		if err != nil {
			return false, err
		}
		v, _ := h.Detected(c.Detector)
		return v, nil
	case catalog.CondHCOFieldUnconfigured:
		return rc.HCOFieldUnconfigured(c.Path), nil
	case catalog.CondTopology:
		v, _ := rc.Topology.Bool(c.Field)
		return v == c.WantBool(), nil
	case catalog.CondImage:
		return rc.Image(c.Name) != "", nil
	case catalog.CondKubeletConfigDir:
		reads, err := rc.KubeletReadsDropIns(a.Role())
		return reads == c.WantBool(), err
	case catalog.CondCRDField:
		// Offline without CRD facts, the newest API is assumed.
		return rc.HasField(c.Name, c.Path) || (rc.AssumeAllKinds && rc.CRDs[c.Name] == nil), nil
	case catalog.CondStorageClass:
		if v, _ := rc.HCOAnnotation(c.Key); c.Key != "" && strings.TrimSpace(v) != "" {
			return true, nil
		}
		access, mode := c.Access()
		return len(rc.StorageClassesOffering(access, mode)) > 0, nil
	}
	return false, nil
}

// Waiting returns the condition that keeps an otherwise active asset
// waiting: every other condition holds, a dependency (an operand image, a
// storage class) is not there yet. The asset is then a missing dependency,
// not inactive.
func Waiting(a *catalog.Asset, rc *rendercontext.RenderContext) (catalog.Condition, bool) {
	var missing *catalog.Condition
	for i, c := range a.Conditions {
		holds, err := conditionHolds(a, c, rc)
		if err != nil {
			// Not understood: not waiting either (Evaluate reports it).
			return catalog.Condition{}, false
		}
		if holds {
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
