package tombstone

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PlanContext is the context the plan renders from once the tombstones
// phase has run, for the controller and every preview alike. The phase
// runs only while the whole autopilot is active and not report-only;
// then the plan no longer sees the obsolete objects it deletes (deleted),
// nor those an asset's write carries (CarriedBy) when they are provably
// the autopilot's or already being deleted: they go with that write, so
// the carrier is not held back by the very objects it replaces. Anyone
// else's stays a peer.
func PlanContext(rc *rendercontext.RenderContext, tombs []Tombstone, act engine.Activation, deleted func(*unstructured.Unstructured) bool) *rendercontext.RenderContext {
	if !act.All() || act.ReportOnly {
		return rc
	}
	carried := map[string]bool{}
	for _, t := range tombs {
		if t.CarriedBy != "" {
			carried[t.Key()] = true
		}
	}
	guard := engine.GuardFor(rc).ForTombstones()
	return rc.WithoutPeers(func(o *unstructured.Unstructured) bool {
		if deleted(o) {
			return true
		}
		if !carried[engine.Identity(o)] {
			return false
		}
		ok, _ := guard.MayDelete(o)
		return ok || o.GetDeletionTimestamp() != nil
	})
}

// WouldDelete is a preview's answer to which objects the tombstones phase
// deletes now (it deletes nothing itself): an object a tombstone not
// carried by an asset names, that the gate lets go (its deletion intent
// check first; g knows the catalog; its clocks start now).
func WouldDelete(rc *rendercontext.RenderContext, tombs []Tombstone, g *gate.Gate) func(*unstructured.Unstructured) bool {
	alone := map[string]bool{}
	for _, t := range tombs {
		if t.CarriedBy == "" {
			alone[t.Key()] = true
		}
	}
	return func(o *unstructured.Unstructured) bool {
		if !alone[engine.Identity(o)] {
			return false
		}
		return g.Judge(rc, gate.ForRemoval(rc, gate.Tombstone, "", o, false)).Go
	}
}
