package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// RemediationKinds are the kinds whose write changes how nodes are
// remediated (fenced, rebooted by another operator): as costly to get
// wrong as a reboot, so their fact-driven writes settle too.
var RemediationKinds = map[string]bool{"NodeHealthCheck": true, "StorageBasedRemediationConfig": true}

// Settles reports whether a write of the asset's object must wait for the
// facts it renders from to settle: it reboots a pool or changes
// remediation.
func Settles(a *catalog.Asset, kind string) bool {
	return a.Disruption == catalog.DisruptionReboot || catalog.RebootKinds[kind] || RemediationKinds[kind]
}

// FactPrint is a short hash of the derived facts an asset renders from:
// the hardware of the nodes of its pools and the topology. Person's intent
// (the HCO) and the autopilot's version are not in it: a change of those
// is never held.
func FactPrint(a *catalog.Asset, rc *rendercontext.RenderContext) (string, error) {
	hw, err := rc.HardwareFor(a.Params)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(struct {
		Hardware rendercontext.Hardware `json:"hardware"`
		Topology rendercontext.Topology `json:"topology"`
	}{hw, rc.Topology})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}
