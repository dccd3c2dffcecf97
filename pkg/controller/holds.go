package controller

import (
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// holds is one reconcile's Hold on writes that reboot a pool, judged on
// its facts rc: outside the HCO's disruption window they are staged (all
// released together when it opens, so each pool rolls once); inside it,
// they wait for their pool to be at rest (rollouts never stack).
func (r *Reconciler) holds(rc *rendercontext.RenderContext) apply.Hold {
	return func(d *engine.Decision, res engine.Result) (engine.Result, bool) {
		if why, opens, staged := engine.Staging(rc, engine.DisruptionOf(d), r.now()); staged {
			res.Outcome, res.Reason = engine.Staged, why
			// Back when the window opens; a window not understood is
			// looked at again with the resync (an HCO edit wakes it).
			res.RetryAfter = 0
			if !opens.IsZero() {
				res.RetryAfter = max(opens.Sub(r.now()), time.Second)
			}
			return res, true
		}
		return r.pools.hold(rc, d, res)
	}
}

func (r *Reconciler) now() time.Time {
	if r.opts.Now != nil {
		return r.opts.Now()
	}
	return time.Now()
}
