package controller

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/clusterread"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
)

// Reconcile converges every asset, in named phases: facts, tombstones,
// plan (the HCO first, then every asset from the effective HCO), gate and
// write (each decision's write or delete, judged by the gate; then the
// tombstones whose settings an asset carries now, with its write),
// report, watches. It reads only the caches; it writes only when something
// drifted. It never returns an error: a failing asset is retried on its
// own backoff, so it cannot change the timing of the others (throttle
// refills, polls, the resync).
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.Observe(time.Since(start).Seconds()) }()

	rc, idle, done := r.readFacts(ctx)
	if done {
		return idle, nil
	}
	p := &pass{r: r, ctx: ctx, hco: rc.HCOObject(), want: clusterread.FactWatches(rc),
		intent: &freshIntent{reader: r.reader.Direct(), namespace: r.opts.Namespace, cached: rc}}
	act := engine.ActivationOf(rc, r.opts.Catalog)
	p.act = act
	r.report.Activation(ctx, p.hco, act)
	rc = p.tombstones(rc, act)
	p.want = clusterread.FactWatches(rc)
	eval := p.plan(rc)
	p.carriedTombstones(act)
	p.report(eval)
	return r.finish(ctx, rc, p.hco.GetResourceVersion(), p.want, p.retry)
}

// readFacts is the facts phase: the render context from the caches, or,
// with no HyperConverged to manage (absent, not served, being deleted),
// the idle state reported and the reconcile's result (done).
func (r *Reconciler) readFacts(ctx context.Context) (*rendercontext.RenderContext, reconcile.Result, bool) {
	r.reader.Warm(ctx)
	facts, err := r.facts(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// No HCO that can be read: nothing to manage. CRD events and
			// the HCO watch wake us up when that changes.
			idle := report.IdleFor(facts, r.opts.Namespace, err)
			r.report.Idle(ctx, idle)
			idleRC := rendercontext.New(facts)
			// The objects read by name (the fleet status among them) are
			// watched while idle too: a change of them is undone at once.
			r.reader.WatchLookups(ctx, func(k rendercontext.ObjectKey) bool { return idleRC.KindAvailable(k.GVK) })
			res, _ := r.finish(ctx, idleRC, "", clusterread.FactWatches(idleRC), r.publishIdle(ctx, idle.Reason))
			return nil, res, true
		}
		log.FromContext(ctx).Error(err, "cannot read cluster facts; retrying", "action", "retry")
		r.report.Reconciled(fmt.Errorf("read cluster facts: %w", err), "")
		// Nothing can be decided: published as idle, never as the last
		// state it managed.
		r.report.Idle(ctx, report.IdleStatus{Reason: report.IdleFactsUnreadable, Message: "the cluster's facts cannot be read: " + err.Error()})
		r.reader.WatchLookups(ctx, func(k rendercontext.ObjectKey) bool { return k.GVK.Group == "" }) // core kinds: always served
		retry := r.gate.Failed("facts")
		return nil, reconcile.Result{RequeueAfter: minPositive(retry, r.publishIdle(ctx, report.IdleFactsUnreadable))}, true
	}
	r.gate.Succeeded("facts")
	rc := rendercontext.New(facts)
	r.reader.WatchLookups(ctx, func(k rendercontext.ObjectKey) bool { return rc.KindAvailable(k.GVK) })
	if rc.HCOTerminating() {
		// Uninstall: the operators owning the operands clean up. Writing
		// now would re-create what they delete; deleting is not ours to do.
		r.report.Idle(ctx, report.IdleStatus{Reason: report.IdleHCOTerminating, Message: "HyperConverged " + r.opts.Namespace + "/" + rendercontext.HCOName + " is being deleted: nothing is written or deleted"})
		res, _ := r.finish(ctx, rc, facts.HCO.GetResourceVersion(), clusterread.FactWatches(rc), r.publishIdle(ctx, report.IdleHCOTerminating))
		return nil, res, true
	}
	return rc, reconcile.Result{}, false
}

// rollingWrite is a write that reboots a pool, sent or waiting, reported
// with its VM impact once the walk is done.
type rollingWrite struct {
	d     *engine.Decision
	res   engine.Result
	rc    *rendercontext.RenderContext
	fresh bool
}

// finish updates the watches and says when to come back: the soonest
// per-asset retry, else the resync.
func (r *Reconciler) finish(ctx context.Context, rc *rendercontext.RenderContext, hcoRV string, want map[schema.GroupVersionKind]bool, retry time.Duration) (reconcile.Result, error) {
	var err error
	if werr := r.reader.Watch(ctx, want); werr != nil {
		err = fmt.Errorf("update watches: %w", werr)
		log.FromContext(ctx).Error(werr, "cannot update watches; retrying", "action", "retry")
		retry = minPositive(retry, r.gate.Failed("watches"))
	} else {
		r.gate.Succeeded("watches")
	}
	r.judgeAdmission(ctx)
	r.followTLS(ctx, rc)
	r.report.Reconciled(err, hcoRV)
	r.started.Do(func() {
		// The first reconcile follows the initial lists of every watch (on
		// a 5,000-node cluster tens of MiB of nodes, decoded then trimmed
		// by the cache): hand that garbage back to the system now rather
		// than over the scavenger's minutes, so the resident memory is the
		// steady state's.
		debug.FreeOSMemory()
	})
	if retry > 0 {
		return reconcile.Result{RequeueAfter: retry + time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// inactive removes what an opt-in asset created once a person turned it
// off, when the gate lets the deletion go: judged on the cached HCO, then
// on a fresh read of it. (Evaluate already marked objects kept because
// only a derived fact changed as Retained.)
func (r *Reconciler) inactive(ctx context.Context, d *engine.Decision, rc *rendercontext.RenderContext, intent *freshIntent) engine.Result {
	res := engine.Result{Outcome: engine.Inactive, Reason: d.Reason}
	live := d.Live
	if live == nil || engine.RemovalCandidate(d, rc) == nil {
		return res
	}
	w := gate.ForRemoval(rc, gate.SwitchOff, d.Asset.Name, live, d.ReportOnly)
	if v := r.gate.Peek(rc, w); !v.Go {
		// Held on what is cached already: no need to read further.
		return switchedOffHeld(res, d, w, v)
	}
	fresh, err := intent.context(ctx)
	if err != nil {
		// Unknown intent never deletes.
		res.Outcome, res.Reason, res.Err = engine.Failed, err.Error(), err
		return res
	}
	if _, _, off, err := engine.ConditionsHold(d.Asset, fresh); err != nil || !off {
		res.Reason = d.Reason + "; kept: the HyperConverged no longer turns it off (the cache was behind)"
		return res
	}
	w = gate.ForRemoval(fresh, gate.SwitchOff, d.Asset.Name, live, d.ReportOnly)
	v := r.gate.Judge(fresh, w)
	if !v.Go {
		return switchedOffHeld(res, d, w, v)
	}
	res.Disruption = &w.Disruption
	if err := apply.Delete(ctx, r.writer, live); err != nil {
		return r.gate.Unanswered(res, w, v, "delete", live, err)
	}
	r.syncer.Forget(engine.Identity(live))
	res.Outcome, res.Reason = engine.Deleted, "asset turned off: "+d.Reason
	return res
}

// switchedOffHeld is the result of a switched-off asset whose deletion
// the gate held: kept (not intended, not provably ours), or waiting like
// any write that rolls its pools (window, pools, report-only).
func switchedOffHeld(res engine.Result, d *engine.Decision, w gate.Write, v gate.Verdict) engine.Result {
	if v.Kept() {
		res.Reason = d.Reason + "; the object is kept: " + v.Reason
		return res
	}
	res.Disruption = &w.Disruption
	return v.Held(res, "switched off; the deletion waits")
}

// replaced deletes the object d replaces (an earlier form of its
// settings) once d's own object is in place: with d's write when it was
// just applied (the gate judged that write over both objects' pools, on
// the HCO as just re-read), or, d's object being in place already (an
// earlier deletion failed), judged alone. What a person tailored on it
// was already checked when the pair was made (engine pairReplacements);
// the gate's deletion intent check asks again on the fresh HCO.
func (r *Reconciler) replaced(ctx context.Context, d *engine.Decision, res engine.Result, intent *freshIntent) engine.Result {
	old := d.Replaces
	switch res.Outcome {
	case engine.Applied, engine.Unchanged:
	default:
		return res // held or failed: the pair waits together
	}
	fresh, err := intent.context(ctx)
	if err != nil {
		res.Outcome, res.Reason, res.Err = engine.Failed, err.Error(), err
		return res
	}
	w := gate.ForRemoval(fresh, gate.Supersede, d.Asset.Name, old, d.ReportOnly)
	if res.Outcome == engine.Applied {
		w = gate.Riding(w) // its disruption went with the write
	} else {
		res.Disruption = &w.Disruption
	}
	v := r.gate.Judge(fresh, w)
	switch {
	case v.Kept():
		res.Reason = strings.TrimPrefix(res.Reason+"; ", "; ") + engine.ObjectKey(old) + ", which it replaces, is kept: " + v.Reason
		return res
	case !v.Go:
		return v.Held(res, engine.ObjectKey(old)+", which it replaces, waits to be deleted")
	}
	err = apply.Delete(ctx, r.writer, old)
	if err != nil && res.Outcome == engine.Applied && !gate.IsRefusal(err) && !apierrors.IsConflict(err) {
		// Once more at once: MCO renders both changes together only
		// within its few seconds' delay (not on a conflict: the
		// preconditions are the cache's, and would fail again).
		err = apply.Delete(ctx, r.writer, old)
	}
	switch {
	case err != nil && res.Outcome == engine.Applied:
		res.RetryAfter = minPositive(res.RetryAfter, time.Second)
		// The new object is written and rolls its pools: that stays its
		// outcome (its rollout is reported); the deletion is retried on
		// its own at the next pass, judged alone.
		res.Reason = strings.TrimPrefix(res.Reason+"; ", "; ") + fmt.Sprintf("deleting %s, which it replaces, failed (tried again on its own): %v", engine.ObjectKey(old), err)
	case err != nil:
		res = r.gate.Unanswered(res, w, v, "delete of the object it replaces", old, err)
	default:
		r.syncer.Forget(engine.Identity(old))
		res.Outcome = engine.Applied
		res.Reason = strings.TrimPrefix(res.Reason+"; ", "; ") + "deleted " + engine.ObjectKey(old) + ", which it replaces"
	}
	return res
}

// facts reads the render context's inputs from the caches, with the
// operand images the autopilot's Deployment gives (Options.Images).
func (r *Reconciler) facts(ctx context.Context) (rendercontext.Facts, error) {
	f, err := r.reader.Facts(ctx)
	f.Images = r.opts.Images
	return f, err
}

func (r *Reconciler) now() time.Time {
	if r.opts.Now != nil {
		return r.opts.Now()
	}
	return time.Now()
}

// publishIdle says in the fleet status that the autopilot is idle, and why.
func (r *Reconciler) publishIdle(ctx context.Context, reason report.IdleReason) time.Duration {
	if r.fleet == nil {
		return 0
	}
	return r.publish(ctx, func() (bool, time.Duration, error) { return r.fleet.WriteIdle(ctx, string(reason)) })
}

// publish writes the fleet status when it differs from the cluster's copy
// (write), at most once per backoff after a failure; it returns when to
// look again (0: no need).
func (r *Reconciler) publish(ctx context.Context, write func() (bool, time.Duration, error)) time.Duration {
	if v := r.gate.Attempt("fleet-status"); !v.Go {
		return v.RetryAfter
	}
	changed, recheck, err := write()
	var paused *fleetstatus.PausedError
	if errors.As(err, &paused) {
		log.FromContext(ctx).Info("fleet status writes paused: another writer keeps changing it", "configMap", r.opts.StatusNamespace+"/"+fleetstatus.Name, "action", "throttle", "retryAfter", paused.Wait.Round(time.Second).String())
		return paused.Wait
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "cannot write the fleet status; retrying", "action", "retry")
		return r.gate.Failed("fleet-status")
	}
	r.gate.Succeeded("fleet-status")
	if changed {
		log.FromContext(ctx).Info("fleet status written", "configMap", r.opts.StatusNamespace+"/"+fleetstatus.Name, "action", "write")
	}
	return recheck
}
