package controller

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// tombstones is the tombstones phase: it reaps the objects earlier
// releases created and this one no longer ships, except those whose
// settings an asset carries now (tombstone.CarriedByAnnotation: reaped
// with that asset's write, after the plan), and returns the context
// without what it deleted nor what goes with a write (so the carrier is
// not held back by the very objects it replaces).
func (p *pass) tombstones(rc *rendercontext.RenderContext, act engine.Activation) *rendercontext.RenderContext {
	r := p.r
	var now, carried []tombstone.Tombstone
	for _, t := range r.opts.Tombstones {
		if t.CarriedBy != "" {
			carried = append(carried, t)
		} else {
			now = append(now, t)
		}
	}
	p.carried = carried
	if !act.All() || act.ReportOnly {
		// A paused or partial autopilot leaves everything as it is (the
		// deletion Guard refuses too, on the fresh HCO as well).
		return rc
	}
	p.reaping = true
	p.reaped = r.reaper.Reap(p.ctx, now, p.judgeRemoval(nil))
	return tombstone.PlanContext(rc, r.opts.Tombstones, act, func(o *unstructured.Unstructured) bool { return isReaped(p.reaped, o) })
}

func isReaped(results []tombstone.Result, o *unstructured.Unstructured) bool {
	for _, t := range results {
		if t.Deleted && engine.Identity(t.Tombstone.Object) == engine.Identity(o) {
			return true
		}
	}
	return false
}

// carriedTombstones reaps, after the gate-and-write phase, the obsolete
// objects whose settings an asset carries now: with that asset's write
// (the pool renders both changes together), or alone once its object is
// in place, or when no asset will carry them (turned off, excluded,
// unmanaged). While a carrier that will write is held (by the gate, a
// failure, a conflict), they wait with it: never deleted first, which
// would roll the pool without the settings and again with them.
func (p *pass) carriedTombstones(act engine.Activation) {
	if len(p.carried) == 0 || !act.All() || act.ReportOnly {
		return
	}
	results := p.r.reaper.Reap(p.ctx, p.carried, p.judgeRemoval(func(t *unstructured.Unstructured) (string, bool) {
		for _, c := range p.carried {
			if engine.Identity(c.Object) == engine.Identity(t) {
				return engine.CarrierWaits(c.CarriedBy, c.CarriedOnly, p.results)
			}
		}
		return "", false
	}))
	p.reaped = append(p.reaped, results...)
}

// judgeRemoval is the gate's judgement of every tombstone deletion,
// with (when set) why it must wait for another write as the write's
// dependency. Judged first on the cached HCO, and, when that lets it go,
// again on the HCO as the API server has it now (read once per pass): an
// exclusion or a window just added holds. Deleting an old MachineConfig
// or KubeletConfig rolls every pool it reaches: the gate judges it like
// any write.
func (p *pass) judgeRemoval(waits func(*unstructured.Unstructured) (string, bool)) tombstone.Hold {
	judge := func(rc *rendercontext.RenderContext, live *unstructured.Unstructured, judge func(*rendercontext.RenderContext, gate.Write) gate.Verdict) (engine.Disruption, gate.Verdict) {
		w := gate.ForRemoval(rc, gate.Tombstone, "", live, false)
		if waits != nil {
			w.Waits, _ = waits(live)
		}
		v := judge(rc, w)
		if !v.Go {
			p.retry = minPositive(p.retry, v.RetryAfter)
		}
		return w.Disruption, v
	}
	return func(live *unstructured.Unstructured) (engine.Disruption, gate.Verdict, error) {
		if dis, v := judge(p.intent.cached, live, p.r.gate.Peek); !v.Go {
			return dis, v, nil // held on what is cached already: no need to read further
		}
		fresh, err := p.intent.context(p.ctx)
		if err != nil {
			return engine.ObjectDisruption(live), gate.Verdict{}, err // unknown intent never deletes
		}
		dis, v := judge(fresh, live, p.r.gate.Judge)
		return dis, v, nil
	}
}

// reportTombstones counts the VMs each deletion's rollout moves and
// reports every tombstone of this pass, once.
func (p *pass) reportTombstones() {
	r := p.r
	if !p.reaping {
		return
	}
	for i, t := range p.reaped {
		if t.Status == tombstone.Error {
			p.retry = minPositive(p.retry, t.RetryAfter)
			if gate.IsRefusal(t.Err) && !strings.HasPrefix(t.Reason, "the API server refused") {
				// Refused on its merits: a person must act (a lost verb,
				// an admission policy); tried again on its backoff.
				p.reaped[i].Reason = "the API server refused the tombstone delete of " + engine.ObjectKey(t.Tombstone.Object) + ": " + t.Reason
			}
		}
		// What the rollout does to the VMs of every pool it reaches,
		// counted afresh when the deletion is sent.
		if dis := t.Disruption; dis.Reboot && len(dis.Rolled()) > 0 && t.Status != tombstone.Error {
			p.reaped[i].Impact = r.impacts.count(p.ctx, p.intent.cached, dis.Rolled(), t.Deleted)
		}
	}
	r.report.Tombstones(p.ctx, p.hco, p.reaped)
}
