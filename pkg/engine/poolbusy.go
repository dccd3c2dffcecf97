package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PoolBusy says why a write that reboots pool must wait: MCO is rolling
// the pool now (its MachineConfigPool is Updating) or it is Degraded, so
// another write would stack a second rollout on the first, or pile onto a
// pool that cannot finish one. "" when the pool is at rest or unknown (no
// pool read: offline, or not OpenShift).
func PoolBusy(rc *rendercontext.RenderContext, pool string) string {
	for _, p := range rc.Pools {
		if p.GetName() != pool {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Updating":
				return fmt.Sprintf("MachineConfigPool %s is updating (MCO is rolling its nodes now)", pool)
			case "Degraded":
				return fmt.Sprintf("MachineConfigPool %s is degraded (%v)", pool, m["message"])
			}
		}
	}
	return ""
}
