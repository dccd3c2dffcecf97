package controller

import (
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// holds is one reconcile's Hold on writes that reboot a pool, judged on
// its facts rc (wait).
func (r *Reconciler) holds(rc *rendercontext.RenderContext) apply.Hold {
	return func(d *engine.Decision, res engine.Result) (engine.Result, bool) {
		o, why, retry, held := r.wait(rc, d.Asset.Name, engine.DisruptionOf(d))
		if !held {
			return engine.Result{}, false
		}
		res.Outcome, res.Reason, res.RetryAfter = o, why, retry
		return res, true
	}
}

// wait says whether a write with disruption dis (of an asset, or an
// object, named by key) must wait now, why, and when to look again:
// outside the HCO's disruption window it is staged (all are released
// together when it opens, so each pool rolls once); inside it, it waits
// for its pool to be at rest (rollouts never stack). A window not
// understood is looked at again on the next event or resync.
func (r *Reconciler) wait(rc *rendercontext.RenderContext, key string, dis engine.Disruption) (engine.Outcome, string, time.Duration, bool) {
	now := r.now()
	if why, opens, staged := engine.Staging(rc, dis, now); staged {
		var retry time.Duration
		if !opens.IsZero() {
			retry = max(opens.Sub(now), time.Second)
		}
		return engine.Staged, why, retry, true
	}
	if why, retry, held := r.pools.wait(rc, key, dis); held {
		return engine.Settling, why, retry, true
	}
	return "", "", 0, false
}

func (r *Reconciler) now() time.Time {
	if r.opts.Now != nil {
		return r.opts.Now()
	}
	return time.Now()
}
