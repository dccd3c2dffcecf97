package controller

import (
	"strings"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// holds is one reconcile's Hold on writes that reboot a pool, judged on
// its facts rc (wait).
func (r *Reconciler) holds(rc *rendercontext.RenderContext) apply.Hold {
	return func(d *engine.Decision, res engine.Result) (engine.Result, bool) {
		if d.ReportOnly {
			return reportOnly(d, res), true
		}
		if d.Live != nil && !engine.ReachesNodes(res.Drift) && !d.MovesPools {
			return engine.Result{}, false // labels and annotations reboot nothing, unless they move the object between pools
		}
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
// understood is looked at again on the next event (fixing it is an HCO
// edit) or the resync.
func (r *Reconciler) wait(rc *rendercontext.RenderContext, key string, dis engine.Disruption) (engine.Outcome, string, time.Duration, bool) {
	now := r.now()
	if why, opens, staged := engine.Staging(rc, dis, now); staged {
		// Back when the window opens, and no later than the resync: a
		// staged write must not suspend it for days.
		retry := r.opts.Resync
		if !opens.IsZero() {
			retry = min(max(opens.Sub(now), time.Second), r.opts.Resync)
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

// reportOnly is the outcome of a write that report-only holds: Drifted,
// with the fields a write would change (confirmed by a dry-run where the
// local verdict was uncertain); nothing is sent.
func reportOnly(d *engine.Decision, res engine.Result) engine.Result {
	res.Outcome = engine.Drifted
	res.Reason = "report-only: differs from what would be applied in " + strings.Join(res.Drift, ", ") + "; nothing is written"
	if d.Live == nil {
		res.Reason = "report-only: the object does not exist; a write would create it"
	}
	return res
}
