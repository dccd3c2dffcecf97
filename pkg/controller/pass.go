package controller

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/clusterread"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// pass is one reconcile's walk of the catalog: what it has learned so far
// (the kinds to watch, the soonest retry, the writes that roll a pool).
type pass struct {
	r      *Reconciler
	ctx    context.Context
	hco    *unstructured.Unstructured
	intent *freshIntent
	// act is the HCO's activation switch: paused publishes idle.
	act engine.Activation
	// want are the kinds to watch after the walk.
	want map[schema.GroupVersionKind]bool
	// retry is the soonest time an asset asked to be looked at again.
	retry time.Duration
	// rolling are the writes that reboot a pool, reported after the walk.
	rolling []rollingWrite
	// results are each asset's decision and result this pass (the
	// carriers of tombstones are judged on them).
	results map[string]engine.Step
	// carried are the tombstones an asset's write carries; reaped every
	// tombstone's result this pass, reported once.
	carried []tombstone.Tombstone
	reaped  []tombstone.Result
	// reaping: the tombstones phase ran (not paused, not report-only).
	reaping bool
}

// plan is the plan and gate-and-write phases: the golden config is
// evaluated and written first; every other asset is then evaluated from
// the HCO in effect (the server's copy after that write, else the live
// one as it is: report-only, unmanaged or held, never the one the
// autopilot would have written) and written in catalog order.
func (p *pass) plan(rc *rendercontext.RenderContext) engine.Evaluation {
	walk := p.r.evaluator.Begin(p.ctx, p.r.opts.Catalog, rc, p.r.reader)
	var effective *unstructured.Unstructured
	var unconverged string
	for i := range walk.Golden {
		res := p.step(&walk.Golden[i], rc)
		if i != len(walk.Golden)-1 {
			continue // only the golden config's own write makes the HCO in effect
		}
		if res.Object != nil && res.Object.GroupVersionKind() == rendercontext.HCOGVK {
			effective = res.Object
		}
		if res.Outcome == engine.Throttled || res.Outcome == engine.Failed || res.Outcome == engine.Refused {
			// A write that did not land leaves the dependents as they are.
			unconverged = string(res.Outcome) + ": " + res.Reason
		}
	}
	eval := walk.Rest(effective, unconverged)
	for i := len(walk.Golden); i < len(eval.Decisions); i++ {
		p.step(&eval.Decisions[i], eval.Context)
	}
	return eval
}

// step is the gate-and-write phase for one decision: rc is the context d
// was evaluated with. Every write and delete it sends has passed the gate.
func (p *pass) step(d *engine.Decision, rc *rendercontext.RenderContext) engine.Result {
	r, ctx := p.r, p.ctx
	if d.Held {
		// Backing off: the last recorded failure stands; only come back
		// when its time is up.
		p.record(d, engine.Result{Outcome: engine.Failed, Reason: d.Reason})
		p.retry = minPositive(p.retry, r.gate.Attempt(d.Asset.Name).RetryAfter)
		if gvk, ok := r.kinds[d.Asset.Name]; ok && rc.KindAvailable(gvk) {
			p.want[gvk] = true
		}
		return engine.Result{} // its decision says why (Rest reads it)
	}
	if d.FactPrint != "" {
		r.gate.Observe(d.Asset.Name, d.SettlePrint())
	}
	var res engine.Result
	switch d.Verdict {
	case engine.VerdictIncluded:
		var fresh apply.Fresh
		if d.Replaces != nil || p.carries(d.Asset.Name) {
			// Its write goes with a deletion (the object it replaces, a
			// tombstone whose settings it carries): judged, like every
			// deletion, on the HCO as the API server has it now.
			fresh = p.intent.context
		}
		res = r.syncer.SyncOn(ctx, rc, d, fresh) // the gate judges inside, just before a write
		if d.Replaces != nil {
			res = r.replaced(ctx, d, res, p.intent)
		}
	case engine.VerdictInactive:
		res = r.inactive(ctx, d, rc, p.intent)
	default:
		res = engine.Reported(d)
	}
	p.watch(d, rc)
	if res.Outcome == engine.Failed || res.Outcome == engine.Refused {
		// A render or read failure can be transient (a CRD just
		// installed and not yet discoverable), a refusal lasts until a
		// person acts: this asset's own backoff, growing to minutes.
		res.RetryAfter = r.gate.Failed(d.Asset.Name)
	} else {
		r.gate.Succeeded(d.Asset.Name)
	}
	if needsImpact(d, res) {
		// Reported after the walk, with the VMs counted once per pool:
		// a LIST between two released writes could split one rollout
		// of the pool into two (MCO renders within 5 s).
		last, _ := r.report.Last(d.Asset.Name)
		p.rolling = append(p.rolling, rollingWrite{d, res, rc, last.Outcome != res.Outcome})
	} else {
		r.report.Asset(ctx, p.hco, d, res)
	}
	if d.Live != nil && res.Object == nil && !clusterread.IsFact(d.Live.GroupVersionKind()) &&
		!annotations.Labelled(d.Live.GetLabels()) {
		res.RetryAfter = minPositive(res.RetryAfter, r.opts.UnwatchedPoll)
	}
	p.retry = minPositive(p.retry, res.RetryAfter)
	p.record(d, res)
	return res
}

// carries reports whether asset carries the settings of a tombstone this
// pass reaps after the walk.
func (p *pass) carries(asset string) bool {
	for _, t := range p.carried {
		for _, name := range strings.Split(t.CarriedBy, ",") {
			if strings.TrimSpace(name) == asset && p.r.reaper.MayExist(p.ctx, t) {
				return true
			}
		}
	}
	return false
}

// record keeps d's result for the phases after the walk.
func (p *pass) record(d *engine.Decision, res engine.Result) {
	if p.results == nil {
		p.results = map[string]engine.Step{}
	}
	p.results[d.Asset.Name] = engine.Step{Decision: d, Result: res}
}

// watch records the kinds d needs watched.
func (p *pass) watch(d *engine.Decision, rc *rendercontext.RenderContext) {
	if d.Rendered != nil && (d.Verdict != engine.VerdictMissingDependency || d.AwaitsHCO) && rc.KindAvailable(d.Rendered.GroupVersionKind()) {
		p.want[d.Rendered.GroupVersionKind()] = true
	}
	if gvk, ok := p.r.kinds[d.Asset.Name]; ok && d.Verdict == engine.VerdictPaused && rc.KindAvailable(gvk) {
		// Paused kinds stay watched: informers are not torn down and
		// rebuilt by every reconcile of a paused autopilot.
		p.want[gvk] = true
	}
}

// report is the report phase: the pool rollouts with their VM impact, the
// HCO inputs not acted on, and the fleet status.
func (p *pass) report(eval engine.Evaluation) {
	r, ctx := p.r, p.ctx
	p.reportTombstones()
	r.impacts.annotate(ctx, p.rolling)
	for _, w := range p.rolling {
		r.report.Asset(ctx, p.hco, w.d, w.res)
	}
	r.report.Notices(ctx, p.hco, r.evaluator.Notices(r.opts.Catalog, eval))
	switch {
	case r.fleet == nil:
	case p.act.Paused:
		// Paused manages nothing: a hub must not read its last features
		// as compliant.
		p.retry = minPositive(p.retry, r.publishIdle(ctx, report.IdlePaused))
	case p.act.Beside.Holds():
		// Beside the shipped autopilot nothing is managed by this one: a
		// hub reads why, not features it does not keep.
		p.retry = minPositive(p.retry, r.publishIdle(ctx, report.IdleBesideShipped))
	default:
		// A report, like an Event: written in report-only too.
		statuses := features.Of(r.opts.Catalog, eval.Context, eval.Decisions, r.report.Snapshot().Last)
		p.retry = minPositive(p.retry, r.publish(ctx, func() (bool, time.Duration, error) { return r.fleet.Write(ctx, statuses) }))
	}
}
