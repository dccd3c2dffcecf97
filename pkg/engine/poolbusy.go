package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PoolBusy says why a write that reboots pool must wait, "" when the pool
// is at rest: bounded says the wait may end by itself (a degraded pool may
// be waiting for exactly this correction); every other reason holds until
// the pool is at rest.
//
// At rest is MCO's own judgement, read from the pool's status as the node
// controller writes it (machine-config-operator
// pkg/controller/node/status.go, calculateStatus): observedGeneration is
// the generation it judged, Updated is True only when every machine is
// updated, ready and available, and only then is status.configuration set
// to spec.configuration (the render it rolls to). So a pool is busy when:
//   - MCO has not reported on it (no status or no Updated condition: a
//     pool just created) or not on its latest generation (unknown holds);
//   - it is Degraded (bounded);
//   - it is paused: MCO rolls nothing then, and a write joins the rollout
//     the admin starts by resuming it, so it does not wait (at rest);
//   - Updating is True, Updated is not True, or the status's render is
//     not the spec's (MCO is rolling it, or is about to).
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
	case conds["Updating"]["status"] == "True":
		return fmt.Sprintf("MachineConfigPool %s is updating (MCO is rolling its nodes now)", name), false
	case conds["Updated"]["status"] != "True":
		return fmt.Sprintf("MachineConfigPool %s is not updated (not every node runs its configuration yet)", name), false
	case spec != status:
		return fmt.Sprintf("MachineConfigPool %s is about to roll (its configuration %s is not yet the one its nodes run, %s)", name, spec, status), false
	}
	return "", false
}
