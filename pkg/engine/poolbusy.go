package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PoolBusy says why a write that reboots pool must wait, "" when the pool
// is at rest: bounded says the wait ends by itself after PoolBusyBound (a
// degraded pool may be waiting for exactly this correction; a node that
// is down is no rollout); every other reason holds until the pool is at
// rest.
//
// At rest is MCO's own judgement, read from the pool's status as the node
// controller writes it (machine-config-operator
// pkg/controller/node/status.go, calculateStatus): observedGeneration is
// the generation it judged; Updated is True only when every machine is
// updated, ready and available, and only then is status.configuration set
// to spec.configuration (the render the render controller made). So:
//   - no status or no Updated condition (a pool just created), or a
//     generation MCO has not judged: unknown, held;
//   - Degraded: held, bounded, even during a rollout (a node failing
//     mid-rollout stops it: waiting longer does not finish it, and the
//     correction may be what it waits for);
//   - paused: MCO rolls nothing, and a write joins the rollout the admin
//     starts by resuming it: at rest;
//   - the status's render is not the spec's: MCO is rolling the pool (or
//     about to): held until it is done;
//   - Updating True or Updated not True with the render the spec's: a
//     node not ready or unavailable, no rollout: held, bounded.
//
// A pool not among rc.Pools is reached by no write (no such pool, not
// OpenShift, offline): "".
func PoolBusy(rc *rendercontext.RenderContext, pool string) (why string, bounded bool) {
	for _, p := range rc.Pools {
		if p.GetName() != pool {
			continue
		}
		return poolState(p)
	}
	return "", false
}

func poolState(p *unstructured.Unstructured) (string, bool) {
	name := p.GetName()
	conds := map[string]map[string]any{}
	list, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok {
			if t, ok := m["type"].(string); ok {
				conds[t] = m
			}
		}
	}
	observed, found, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	switch {
	case conds["Updated"] == nil:
		return fmt.Sprintf("MachineConfigPool %s has no state from MCO yet (no Updated condition)", name), false
	case !found || observed < p.GetGeneration():
		return fmt.Sprintf("MachineConfigPool %s changed and MCO has not judged it yet (observedGeneration %d of generation %d)", name, observed, p.GetGeneration()), false
	case conds["Degraded"]["status"] == "True":
		return fmt.Sprintf("MachineConfigPool %s is degraded (%v)", name, conds["Degraded"]["message"]), true
	}
	if paused, _, _ := unstructured.NestedBool(p.Object, "spec", "paused"); paused {
		return "", false
	}
	spec, _, _ := unstructured.NestedString(p.Object, "spec", "configuration", "name")
	status, _, _ := unstructured.NestedString(p.Object, "status", "configuration", "name")
	switch {
	case spec != status:
		return fmt.Sprintf("MachineConfigPool %s is updating: MCO is rolling its nodes to %s (they run %s)", name, spec, status), false
	case conds["Updating"]["status"] == "True" || conds["Updated"]["status"] != "True":
		return fmt.Sprintf("MachineConfigPool %s is not updated: a node is not ready or unavailable, with no rollout", name), true
	}
	return "", false
}
