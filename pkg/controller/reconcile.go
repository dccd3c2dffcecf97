package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/clusterread"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Reconcile converges every asset. It reads only the cache; it writes only
// when something drifted. It never returns an error: a failing asset is
// retried on its own backoff (retries), so it cannot change the timing of
// the others (throttle refills, polls, the resync).
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)

	r.reader.Warm(ctx)
	facts, err := r.facts(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// No HCO that can be read: nothing to manage. CRD events and
			// the HCO watch wake us up when that changes.
			idle := report.IdleFor(facts, r.opts.Namespace, err)
			r.report.Idle(ctx, idle)
			return r.finish(ctx, "", clusterread.FactWatches(rendercontext.New(facts)), r.publishIdle(ctx, idle.Reason))
		}
		logger.Error(err, "cannot read cluster facts; retrying", "action", "retry")
		r.report.Reconciled(fmt.Errorf("read cluster facts: %w", err), "")
		return reconcile.Result{RequeueAfter: r.gate.Failed("facts")}, nil
	}
	r.gate.Succeeded("facts")
	rc := rendercontext.New(facts)
	r.reader.WatchLookups(ctx, func(k rendercontext.ObjectKey) bool { return rc.KindAvailable(k.GVK) })
	hco := facts.HCO
	if rc.HCOTerminating() {
		// Uninstall: the operators owning the operands clean up. Writing
		// now would re-create what they delete; deleting is not ours to do.
		r.report.Idle(ctx, report.IdleStatus{Reason: report.IdleHCOTerminating, Message: "HyperConverged " + r.opts.Namespace + "/" + rendercontext.HCOName + " is being deleted: nothing is written or deleted"})
		return r.finish(ctx, hco.GetResourceVersion(), clusterread.FactWatches(rc), r.publishIdle(ctx, report.IdleHCOTerminating))
	}
	act := engine.ActivationOf(rc, r.opts.Catalog)
	r.report.Activation(ctx, hco, act)

	intent := &freshIntent{reader: r.reader.Direct(), namespace: r.opts.Namespace, cached: rc}
	var retry time.Duration
	rc = r.tombstones(ctx, rc, act, intent, &retry)

	want := clusterread.FactWatches(rc)
	var rolling []rollingWrite
	eval := r.evaluator.Plan(ctx, r.opts.Catalog, rc, r.reader, func(d *engine.Decision, rc *rendercontext.RenderContext) engine.StepResult {
		// rc: the context d was evaluated with (the effective HCO after the golden config).
		if d.Held {
			// Backing off: the last recorded failure stands; only come back
			// when its time is up.
			left, _ := r.gate.BackingOff(d.Asset.Name)
			retry = minPositive(retry, left)
			if gvk, ok := r.kinds[d.Asset.Name]; ok && rc.KindAvailable(gvk) {
				want[gvk] = true
			}
			return engine.StepResult{}
		}
		if d.FactPrint != "" {
			r.gate.Observe(d.Asset.Name, d.SettlePrint())
		}
		var res engine.Result
		switch d.Verdict {
		case engine.VerdictIncluded:
			res = r.syncer.Sync(ctx, rc, d) // the gate judges inside, just before a write
		case engine.VerdictInactive:
			res = r.inactive(ctx, d, rc, intent)
		default:
			res = engine.Reported(d)
		}
		if d.Rendered != nil && (d.Verdict != engine.VerdictMissingDependency || d.AwaitsHCO) && rc.KindAvailable(d.Rendered.GroupVersionKind()) {
			want[d.Rendered.GroupVersionKind()] = true
		}
		if gvk, ok := r.kinds[d.Asset.Name]; ok && d.Verdict == engine.VerdictPaused && rc.KindAvailable(gvk) {
			// Paused kinds stay watched: informers are not torn down and
			// rebuilt by every reconcile of a paused autopilot.
			want[gvk] = true
		}
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
			rolling = append(rolling, rollingWrite{d, res, rc, last.Outcome != res.Outcome})
		} else {
			r.report.Asset(ctx, hco, d, res)
		}
		if d.Live != nil && res.Object == nil && !clusterread.IsFact(d.Live.GroupVersionKind()) &&
			!annotations.Labelled(d.Live.GetLabels()) {
			res.RetryAfter = minPositive(res.RetryAfter, r.opts.UnwatchedPoll)
		}
		retry = minPositive(retry, res.RetryAfter)
		// The HCO comes first; everything after renders from its effective
		// state: the server's copy after a write, else the live one as it
		// is (report-only or unmanaged: the HCO in effect, never the one
		// the autopilot would have written). A write that did not land
		// leaves dependents as they are (Plan).
		out := engine.StepResult{HCO: res.Object}
		if res.Outcome == engine.Throttled || res.Outcome == engine.Failed || res.Outcome == engine.Refused {
			out.Unconverged = string(res.Outcome) + ": " + res.Reason
		}
		return out
	})
	r.impacts.annotate(ctx, rolling)
	for _, w := range rolling {
		r.report.Asset(ctx, hco, w.d, w.res)
	}
	r.report.Notices(ctx, hco, r.evaluator.Notices(r.opts.Catalog, eval))
	if r.fleet != nil {
		// A report, like an Event: written in report-only too.
		statuses := features.Of(r.opts.Catalog, eval.Context, eval.Decisions, r.report.Snapshot().Last)
		retry = minPositive(retry, r.publish(ctx, func() (bool, error) { return r.fleet.Write(ctx, statuses) }))
	}
	return r.finish(ctx, hco.GetResourceVersion(), want, retry)
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
func (r *Reconciler) finish(ctx context.Context, hcoRV string, want map[schema.GroupVersionKind]bool, retry time.Duration) (reconcile.Result, error) {
	var err error
	if werr := r.reader.Watch(ctx, want); werr != nil {
		err = fmt.Errorf("update watches: %w", werr)
		log.FromContext(ctx).Error(werr, "cannot update watches; retrying", "action", "retry")
		retry = minPositive(retry, r.gate.Failed("watches"))
	} else {
		r.gate.Succeeded("watches")
	}
	r.report.Reconciled(err, hcoRV)
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
// off, if the Guard allows, both judged on a fresh read of the HCO.
// (Evaluate already marked objects kept because only a derived fact
// changed as Retained.)
func (r *Reconciler) inactive(ctx context.Context, d *engine.Decision, rc *rendercontext.RenderContext, intent *freshIntent) engine.Result {
	res := engine.Result{Outcome: engine.Inactive, Reason: d.Reason}
	live := d.Live
	if live == nil || engine.RemovalCandidate(d, rc) == nil {
		return res
	}
	if ok, why := engine.GuardFor(rc).MayDelete(live); !ok {
		// Refused on what is cached already: no need to read further.
		res.Reason = d.Reason + "; the object is kept: " + why
		return res
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
	w := gate.ForRemoval(fresh, gate.SwitchOff, d.Asset.Name, live, d.ReportOnly)
	if v := r.gate.Judge(fresh, w); !v.Go {
		// Deleting a MachineConfig rolls its pools like any write: the
		// same window, pool and report-only rules.
		res.Outcome, res.RetryAfter = v.Outcome, v.RetryAfter
		res.Reason = "switched off; the deletion waits: " + v.Reason
		return res
	}
	deleted, why, err := apply.Delete(ctx, r.writer, engine.GuardFor(fresh), live)
	switch {
	case err != nil && gate.IsRefusal(err):
		err = fmt.Errorf("delete %s: %w", engine.ObjectKey(live), err)
		v := r.gate.Refused(w, err)
		res.Outcome, res.Reason, res.Err = v.Outcome, v.Reason, err
	case err != nil:
		res.Outcome, res.Reason, res.Err = engine.Failed, fmt.Sprintf("delete %s: %v", engine.ObjectKey(live), err), err
	case deleted:
		r.syncer.Forget(engine.Identity(live))
		res.Outcome, res.Reason = engine.Deleted, "asset turned off: "+d.Reason
	default:
		res.Reason = d.Reason + "; the object is kept: " + why
	}
	return res
}

// deletedBy reports the objects tombstones just deleted.
func deletedBy(results []tombstone.Result) func(*unstructured.Unstructured) bool {
	gone := map[string]bool{}
	for _, t := range results {
		if t.Deleted {
			gone[engine.Identity(t.Tombstone.Object)] = true
		}
	}
	return func(o *unstructured.Unstructured) bool { return gone[engine.Identity(o)] }
}

// facts reads the render context's inputs from the caches, with the
// operand images the autopilot's Deployment gives (Options.Images).
func (r *Reconciler) facts(ctx context.Context) (rendercontext.Facts, error) {
	f, err := r.reader.Facts(ctx)
	f.Images = r.opts.Images
	return f, err
}

// tombstones reaps the objects earlier releases created and this one no
// longer ships, and returns the context without what it deleted; retry
// takes the soonest time a held deletion asks to be looked at again.
func (r *Reconciler) tombstones(ctx context.Context, rc *rendercontext.RenderContext, act engine.Activation, intent *freshIntent, retry *time.Duration) *rendercontext.RenderContext {
	if !act.All() || act.ReportOnly {
		// A paused or partial autopilot leaves everything as it is (the
		// deletion Guard refuses too, on the fresh HCO as well).
		return rc
	}
	results := r.reaper.Reap(ctx, r.opts.Tombstones, engine.GuardFor(rc), intent.guard, func(live *unstructured.Unstructured) (engine.Disruption, string, bool) {
		// Judged on the HCO as the API server has it now (the Guard's
		// confirm just read it): a window just added holds. Deleting an
		// old MachineConfig rolls every pool it reaches: the gate judges
		// it like any write.
		fresh, err := intent.context(ctx)
		if err != nil {
			return engine.ObjectDisruption(live), err.Error(), true // unknown intent never deletes
		}
		w := gate.ForRemoval(fresh, gate.Tombstone, "", live, false)
		v := r.gate.Judge(fresh, w)
		if !v.Go {
			*retry = minPositive(*retry, v.RetryAfter)
		}
		return w.Disruption, v.Reason, !v.Go
	})
	r.report.Tombstones(ctx, rc.HCOObject(), results)
	return rc.WithoutPeers(deletedBy(results))
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
	return r.publish(ctx, func() (bool, error) { return r.fleet.WriteIdle(ctx, string(reason)) })
}

// publish writes the fleet status when it differs from the cluster's copy
// (write), at most once per backoff after a failure; it returns when to
// look again (0: no need).
func (r *Reconciler) publish(ctx context.Context, write func() (bool, error)) time.Duration {
	if left, backingOff := r.gate.BackingOff("fleet-status"); backingOff {
		return left
	}
	changed, err := write()
	if err != nil {
		log.FromContext(ctx).Error(err, "cannot write the fleet status; retrying", "action", "retry")
		return r.gate.Failed("fleet-status")
	}
	r.gate.Succeeded("fleet-status")
	if changed {
		log.FromContext(ctx).Info("fleet status written", "configMap", r.opts.StatusNamespace+"/"+fleetstatus.Name, "action", "write")
	}
	return 0
}
