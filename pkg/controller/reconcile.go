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
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// settling reports how long a write of d must wait for the facts it
// renders from to settle (pkg/settle): only a reboot-causing or
// remediation write whose facts changed waits.
func (r *Reconciler) settling(d *engine.Decision) (time.Duration, bool) {
	if d.FactPrint == "" {
		return 0, false
	}
	livePrint := ""
	if d.Live != nil {
		livePrint = d.Live.GetAnnotations()[annotations.Facts]
	}
	return r.settle.Wait(d.Asset.Name, d.FactPrint, livePrint, d.Live != nil)
}

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
			r.report.Idle(ctx, report.IdleFor(facts, r.opts.Namespace, err))
			return r.finish(ctx, "", clusterread.FactWatches(rendercontext.New(facts)), 0)
		}
		logger.Error(err, "cannot read cluster facts; retrying", "action", "retry")
		r.report.Reconciled(fmt.Errorf("read cluster facts: %w", err), "")
		return reconcile.Result{RequeueAfter: r.retries.failed("facts")}, nil
	}
	r.retries.succeeded("facts")
	rc := rendercontext.New(facts)
	r.reader.WatchLookups(ctx, func(k rendercontext.ObjectKey) bool { return rc.KindAvailable(k.GVK) })
	hco := facts.HCO
	if rc.HCOTerminating() {
		// Uninstall: the operators owning the operands clean up. Writing
		// now would re-create what they delete; deleting is not ours to do.
		r.report.Idle(ctx, report.IdleStatus{Reason: report.IdleHCOTerminating, Message: "HyperConverged " + r.opts.Namespace + "/" + rendercontext.HCOName + " is being deleted: nothing is written or deleted"})
		return r.finish(ctx, hco.GetResourceVersion(), clusterread.FactWatches(rc), 0)
	}
	act := engine.ActivationOf(rc, r.opts.Catalog)
	r.report.Activation(ctx, hco, act)

	intent := &freshIntent{reader: r.reader.Direct(), namespace: r.opts.Namespace, cached: rc}
	var retry time.Duration
	if act.All() && !act.ReportOnly {
		// Tombstones clean up after earlier releases of the whole autopilot;
		// a paused or partial autopilot leaves everything as it is (the
		// deletion Guard refuses too, on the fresh HCO as well). Deleting
		// an old MachineConfig reboots its pool: it waits like any write.
		results := r.reaper.Reap(ctx, r.opts.Tombstones, engine.GuardFor(rc), intent.guard, func(live *unstructured.Unstructured) (string, bool) {
			// Judged on the HCO as the API server has it now (the Guard's
			// confirm just read it): a window just added holds.
			fresh, err := intent.context(ctx)
			if err != nil {
				return err.Error(), true // unknown intent never deletes
			}
			_, why, after, held := r.wait(fresh, engine.ObjectKey(live), engine.ObjectDisruption(live))
			if held {
				retry = minPositive(retry, after)
			}
			return why, held
		})
		r.report.Tombstones(hco, results)
		rc = rc.WithoutPeers(deletedBy(results))
	}

	want := clusterread.FactWatches(rc)
	var rolling []rollingWrite
	eval := r.evaluator.Plan(ctx, r.opts.Catalog, rc, r.reader, func(d *engine.Decision, rc *rendercontext.RenderContext) engine.StepResult {
		// rc: the context d was evaluated with (the effective HCO after the golden config).
		if d.Held {
			// Backing off: the last recorded failure stands; only come back
			// when its time is up.
			left, _ := r.retries.held(d.Asset.Name)
			retry = minPositive(retry, left)
			if gvk, ok := r.kinds[d.Asset.Name]; ok && rc.KindAvailable(gvk) {
				want[gvk] = true
			}
			return engine.StepResult{}
		}
		if d.FactPrint != "" {
			r.settle.Observe(d.Asset.Name, d.FactPrint)
		}
		var res engine.Result
		switch d.Verdict {
		case engine.VerdictIncluded:
			if left, wait := r.settling(d); wait {
				res = engine.Result{Outcome: engine.Settling, RetryAfter: left,
					Reason: fmt.Sprintf("the hardware, topology or objects it renders from changed; this write reboots a pool or changes remediation, so it waits until the change has held for %s (at most %d periods while it keeps changing)", r.opts.SettlePeriod, settle.HoldFactor)}
				break
			}
			res = r.syncer.Sync(ctx, d, r.holds(rc))
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
		if res.Outcome == engine.Failed {
			// A render or read failure can be transient (a CRD just
			// installed and not yet discoverable): this asset's own backoff.
			res.RetryAfter = r.retries.failed(d.Asset.Name)
		} else {
			r.retries.succeeded(d.Asset.Name)
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
		// state: the server's copy after a write, else the live one. A
		// write that did not land leaves dependents as they are (Plan).
		out := engine.StepResult{HCO: res.Object}
		if res.Outcome == engine.Drifted && d.Desired != nil && d.Desired.GroupVersionKind() == rendercontext.HCOGVK {
			// Report-only compares everything as if applied: the assets
			// after the golden config render from the HCO it would make.
			out.HCO = engine.MergeApplied(rc.HCOObject(), d.Desired)
		}
		if res.Outcome == engine.Throttled || res.Outcome == engine.Failed {
			out.Unconverged = string(res.Outcome) + ": " + res.Reason
		}
		return out
	})
	r.impacts.annotate(ctx, rolling)
	for _, w := range rolling {
		r.report.Asset(ctx, hco, w.d, w.res)
	}
	r.report.Notices(ctx, hco, r.evaluator.Notices(r.opts.Catalog, eval))
	if _, backingOff := r.retries.held("fleet-status"); r.fleet != nil && !backingOff {
		// A report, like an Event: written in report-only too, and only
		// when a feature's state or compliance changed; after a failed
		// write, not tried again before its backoff expires.
		statuses := features.Of(r.opts.Catalog, eval.Context, eval.Decisions, r.report.Snapshot().Last)
		if changed, err := r.fleet.Write(ctx, statuses); err != nil {
			log.FromContext(ctx).Error(err, "cannot write the fleet status; retrying", "action", "retry")
			retry = minPositive(retry, r.retries.failed("fleet-status"))
		} else {
			r.retries.succeeded("fleet-status")
			if changed {
				log.FromContext(ctx).Info("fleet status written", "configMap", r.opts.StatusNamespace+"/"+fleetstatus.Name, "action", "write")
			}
		}
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
		retry = minPositive(retry, r.retries.failed("watches"))
	} else {
		r.retries.succeeded("watches")
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
	if held, wait := r.holds(fresh)(d, res); wait {
		return held // deleting a MachineConfig rolls its pool too
	}
	deleted, why, err := apply.Delete(ctx, r.writer, engine.GuardFor(fresh), live)
	switch {
	case err != nil:
		res.Outcome, res.Reason, res.Err = engine.Failed, "delete: "+err.Error(), err
	case deleted:
		r.syncer.Forget(engine.ObjectKey(live))
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
			gone[engine.ObjectKey(t.Tombstone.Object)] = true
		}
	}
	return func(o *unstructured.Unstructured) bool { return gone[engine.ObjectKey(o)] }
}

// facts reads the render context's inputs from the caches, with the
// operand images the autopilot's Deployment gives (Options.Images).
func (r *Reconciler) facts(ctx context.Context) (rendercontext.Facts, error) {
	f, err := r.reader.Facts(ctx)
	f.Images = r.opts.Images
	return f, err
}
