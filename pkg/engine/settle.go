package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
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
// the hardware of the nodes of its pools, the topology, and the objects it
// declares under reads (another operator's object and status: a fence
// template whose BMC check flips). Person's intent (the HCO) and the
// autopilot's version are not in it: a change of those is never held.
func FactPrint(a *catalog.Asset, rc *rendercontext.RenderContext) (string, error) {
	hw, err := rc.HardwareFor(a.Params)
	if err != nil {
		return "", err
	}
	facts := map[string]any{"hardware": hw, "topology": rc.Topology}
	if len(a.Reads) > 0 {
		reads := map[string]any{}
		for _, r := range a.Reads {
			k := rendercontext.KeyOf(r)
			if rc.ObjectErrs[k] != nil {
				// Unknown: the render fails if it needs the object; if it
				// does not (a switch off), the asset must not fail for it.
				reads[k.String()] = "unreadable"
				continue
			}
			reads[k.String()] = stableContent(rc.Objects[k])
		}
		facts["reads"] = reads
	}
	return shortHash(facts)
}

// shortHash is a short hash of v's JSON (maps in key order): the prints
// stamped on objects.
func shortHash(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// objectPrint is a short hash of the object an asset renders (the
// template's output, before a person's patch and mask): what the facts
// make of it, compared by the settle rule.
func objectPrint(u *unstructured.Unstructured) string {
	h, _ := shortHash(u.Object) // content decoded from JSON always encodes
	return h
}

// SettlePrint is what the settle rule judges d's write by: the facts its
// object renders from and the object they render (pkg/settle).
func (d *Decision) SettlePrint() settle.Print {
	return settle.Print{Facts: d.FactPrint, Object: d.ObjectPrint}
}

// volatile are the fields that change without the object's meaning
// changing: a status heartbeat must not restart a settle period, or a
// write would wait for ever.
var volatile = map[string]bool{
	"lastTransitionTime": true, "lastHeartbeatTime": true, "lastUpdateTime": true,
	"lastProbeTime": true, "observedGeneration": true,
}

// stableContent is u's spec and status (and any other top-level content)
// without metadata or volatile fields; nil for an absent object.
func stableContent(u *unstructured.Unstructured) any {
	if u == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" {
			out[k] = withoutVolatile(v)
		}
	}
	return out
}

func withoutVolatile(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if !volatile[k] {
				out[k] = withoutVolatile(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutVolatile(e)
		}
		return out
	}
	return v
}
