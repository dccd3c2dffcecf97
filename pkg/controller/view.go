package controller

import (
	"context"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Preview evaluates every asset now, from the caches, without writing:
// what the next reconcile would decide, and the HCO inputs it would report
// as not understood. The debug endpoints serve it.
func (r *Reconciler) Preview(ctx context.Context) (engine.Evaluation, []engine.Notice, error) {
	eval, err := r.plan(ctx, nil)
	if err != nil {
		return engine.Evaluation{}, nil, err
	}
	gate.Preview(r.opts.Catalog, eval, r.now())
	return eval, r.evaluator.Notices(r.opts.Catalog, eval), nil
}

// PlanWith is the planner's evaluation (before gate.Preview folds in the
// gate's holds) as if the HCO's annotations were changed as set says (a
// nil value removes one): what a switch, a pause or a window would make
// the next reconcile decide, before a person sets it; the caller judges
// each write with the gate. Nothing is written; the caches' HCO is left
// as it is.
func (r *Reconciler) PlanWith(ctx context.Context, set map[string]*string) (engine.Evaluation, []engine.Notice, error) {
	eval, err := r.plan(ctx, set)
	if err != nil {
		return engine.Evaluation{}, nil, err
	}
	return eval, r.evaluator.Notices(r.opts.Catalog, eval), nil
}

func (r *Reconciler) plan(ctx context.Context, set map[string]*string) (engine.Evaluation, error) {
	facts, err := r.facts(ctx)
	if err != nil {
		return engine.Evaluation{}, err
	}
	if len(set) > 0 && facts.HCO != nil {
		hco := facts.HCO.DeepCopy()
		ann := hco.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		for k, v := range set {
			if v == nil {
				delete(ann, k)
			} else {
				ann[k] = *v
			}
		}
		hco.SetAnnotations(ann)
		facts.HCO = hco
	}
	rc := rendercontext.New(facts)
	// The plan renders from the context the tombstones phase leaves.
	now := r.now()
	planned := tombstone.PlanContext(rc, r.opts.Tombstones, engine.ActivationOf(rc, r.opts.Catalog), tombstone.WouldDelete(rc, r.opts.Tombstones,
		gate.New(gate.Config{Catalog: r.opts.Catalog, SettlePeriod: -1, Now: func() time.Time { return now }})))
	return r.evaluator.Preview(ctx, r.opts.Catalog, planned, r.reader), nil
}

// PoolImpacts says what a rollout of pools does to their VMs, from the
// same counts the controller reports (listed afresh at most once a minute
// per set of pools): a preview asked again costs no request.
func (r *Reconciler) PoolImpacts(ctx context.Context, rc *rendercontext.RenderContext, pools []string) []impact.Pool {
	_, out := r.impacts.counted(ctx, rc, pools, false)
	return out
}

// Snapshot is what the controller last recorded, with what is watched,
// what has not synced, and each asset object's write budget.
func (r *Reconciler) Snapshot() report.Snapshot {
	s := r.report.Snapshot()
	s.Health.Unsynced = r.reader.Unsynced()
	s.Health.Watched = r.reader.WatchedKinds()
	s.Health.Throttled = r.gate.Throttled()
	state, reason := r.admissionState()
	s.Health.AdmissionPolicy, s.Health.AdmissionPolicyReason = string(state), reason
	if r.opts.TLS != nil {
		s.Health.TLSProfile = r.opts.TLS.Current().String()
	}
	s.Throttle = make(map[string]throttle.State, len(s.Assets))
	for _, a := range s.Assets {
		if a.Object != "" {
			s.Throttle[a.Object] = r.gate.ThrottleState(a.Identity)
		}
	}
	return s
}

// Synced reports, within ctx's deadline, whether every informer the
// reconciler reads has synced (the readiness probe).
func (r *Reconciler) Synced(ctx context.Context) error { return r.reader.Synced(ctx) }
