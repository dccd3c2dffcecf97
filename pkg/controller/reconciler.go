// Package controller runs the autopilot: one reconciler keyed on the HCO
// that applies the golden HCO config, reads the effective HCO back, and
// syncs every other asset from it.
package controller

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Options configure the reconciler.
type Options struct {
	// Namespace of the HCO.
	Namespace string
	Catalog   *catalog.Catalog
	Renderer  *render.Renderer
	// Tombstones to reap on every reconcile.
	Tombstones []tombstone.Tombstone
	Throttle   throttle.Config
	// Resync re-evaluates everything this often even without events (no API
	// request unless something drifted). Zero means 10 minutes.
	Resync time.Duration
	// UnwatchedPoll re-reads objects the autopilot left alone without
	// labelling them (an unmanaged or invalid object it never applied):
	// they are not in its watch, so this is how it notices the user's fix.
	// Zero means 1 minute.
	UnwatchedPoll time.Duration
	// SyncTimeout bounds how long a reconcile waits for a kind's watch to
	// sync before that kind's assets fail (the others go on). Zero means 10s.
	SyncTimeout time.Duration
	// SettlePeriod is how long a derived fact must hold before a write it
	// asks for that reboots a pool or changes remediation (pkg/settle).
	// Zero means settle.DefaultPeriod; negative, no wait.
	SettlePeriod time.Duration
	// Structures is what the cache's CRD transform keeps of the schemas it
	// drops (CacheOptions); nil: the CRDs' own schemas are read.
	Structures *structure.Store
}

// Reconciler is the autopilot's single reconciler.
type Reconciler struct {
	opts      Options
	cache     client.Reader
	caches    caches
	evaluator *engine.Evaluator
	syncer    *apply.Syncer
	pools     *poolWaits
	reaper    *tombstone.Reaper
	direct    client.Reader
	live      liveReader
	writer    client.Client
	recorder  events.EventRecorder
	watches   *watches
	status    *statusStore
	retries   *retries
	settle    *settle.Tracker
	gate      *syncGate
	// kinds is the kind each asset manages, for warming informers; warmed
	// says every kind's informer has been started.
	kinds  map[string]schema.GroupVersionKind
	warmed atomic.Bool
	// reads are the objects templates look up (catalog reads).
	reads []rendercontext.ObjectKey
}

// Setup registers the reconciler with mgr, whose cache must have been built
// with CacheOptions.
func Setup(mgr manager.Manager, opts Options) (*Reconciler, error) {
	if opts.Resync == 0 {
		opts.Resync = 10 * time.Minute
	}
	if opts.UnwatchedPoll == 0 {
		opts.UnwatchedPoll = time.Minute
	}
	if opts.SettlePeriod == 0 {
		opts.SettlePeriod = settle.DefaultPeriod
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 10 * time.Second
	}
	// A second cache for facts read unfiltered; the manager starts it
	// with its own cache, before the controller.
	facts, err := cache.New(mgr.GetConfig(), factsCacheOptions(opts.Namespace, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
	}))
	if err != nil {
		return nil, fmt.Errorf("create facts cache: %w", err)
	}
	if err := mgr.Add(facts); err != nil {
		return nil, err
	}
	cs := caches{managed: mgr.GetCache(), facts: facts, gate: newSyncGate(opts.SyncTimeout)}
	reads := rendercontext.Reads(opts.Catalog)
	if cs.lookups, err = newLookups(mgr, reads, func() *syncGate { return newSyncGate(opts.SyncTimeout) }); err != nil {
		return nil, err
	}
	r := &Reconciler{
		opts:      opts,
		cache:     cs,
		caches:    cs,
		evaluator: &engine.Evaluator{Renderer: opts.Renderer},
		syncer:    &apply.Syncer{Client: mgr.GetClient(), Throttle: throttle.New(opts.Throttle)},
		pools:     newPoolWaits(),
		reaper:    &tombstone.Reaper{Cache: cs, Reader: mgr.GetAPIReader(), Writer: mgr.GetClient()},
		direct:    mgr.GetAPIReader(),
		live:      liveReader{cache: cs, direct: mgr.GetAPIReader()},
		writer:    mgr.GetClient(),
		recorder:  mgr.GetEventRecorder(annotations.FieldManager),
		status:    newStatusStore(),
		retries:   newRetries(),
		settle:    settle.New(opts.SettlePeriod, nil),
		gate:      cs.gate,
		kinds:     assetKinds(opts.Catalog, opts.Renderer, opts.Namespace),
		reads:     reads,
	}
	r.evaluator.Hold = r.backingOff
	r.syncer.Hold = r.pools.hold
	toHCO := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: r.hcoKey()}}
	})
	// Nodes matter only for their labels, capacity (hardware facts) and
	// the swap their kubelet reports (memory overcommit).
	nodeFacts := predicate.Or(predicate.LabelChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Status.Capacity, n.Status.Capacity) ||
				!equality.Semantic.DeepEqual(o.Status.NodeInfo.Swap, n.Status.NodeInfo.Swap)
		},
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("autopilot").
		WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &apiextensionsv1.CustomResourceDefinition{}, toHCO)).
		WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &corev1.Node{}, toHCO, nodeFacts)).
		Build(r)
	if err != nil {
		return nil, err
	}
	// The CRD and Node watches' initial lists trigger the first reconcile.
	r.watches = &watches{ctrl: c, caches: cs, handler: toHCO, active: map[schema.GroupVersionKind]bool{}}
	r.reaper.Watched = r.watches.has
	// Started with the controller (after leader election, when enabled).
	if err := mgr.Add(manager.RunnableFunc(r.warmAtStart)); err != nil {
		return nil, err
	}
	return r, nil
}

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

// backingOff holds an asset whose last failure's backoff has not expired
// out of the reconcile (engine.Evaluator.Hold).
func (r *Reconciler) backingOff(a *catalog.Asset) (string, bool) {
	left, held := r.retries.held(a.Name)
	if !held {
		return "", false
	}
	last, _ := r.Status(a.Name)
	return fmt.Sprintf("retrying in %s: %s", left.Round(time.Second), last.Reason), true
}

func (r *Reconciler) hcoKey() types.NamespacedName {
	return types.NamespacedName{Namespace: r.opts.Namespace, Name: rendercontext.HCOName}
}

// Reconcile converges every asset. It reads only the cache; it writes only
// when something drifted. It never returns an error: a failing asset is
// retried on its own backoff (retries), so it cannot change the timing of
// the others (throttle refills, polls, the resync).
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)

	r.warm(ctx)
	facts, err := r.facts(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			// No HCO that can be read: nothing to manage. CRD events and
			// the HCO watch wake us up when that changes.
			r.setIdle(ctx, idleReasonFor(facts, r.opts.Namespace, err))
			return r.finish(ctx, "", r.baseWatches(rendercontext.New(facts)), 0)
		}
		logger.Error(err, "cannot read cluster facts; retrying", "action", "retry")
		r.status.reconciled(fmt.Errorf("read cluster facts: %w", err), "")
		return reconcile.Result{RequeueAfter: r.retries.failed("facts")}, nil
	}
	r.retries.succeeded("facts")
	rc := rendercontext.New(facts)
	r.pools.use(rc)
	r.caches.lookups.watch(ctx, r.watches.ctrl, r.watches.handler, func(k rendercontext.ObjectKey) bool { return rc.KindAvailable(k.GVK) })
	hco := facts.HCO
	if rc.HCOTerminating() {
		// Uninstall: the operators owning the operands clean up. Writing
		// now would re-create what they delete; deleting is not ours to do.
		r.setIdle(ctx, IdleStatus{Reason: IdleHCOTerminating, Message: "HyperConverged " + r.opts.Namespace + "/" + rendercontext.HCOName + " is being deleted: nothing is written or deleted"})
		return r.finish(ctx, hco.GetResourceVersion(), r.baseWatches(rc), 0)
	}
	act := engine.ActivationOf(rc, r.opts.Catalog)
	r.recordActivation(ctx, hco, act)

	intent := &freshIntent{reader: r.direct, namespace: r.opts.Namespace, cached: rc}
	if act.All() {
		// Tombstones clean up after earlier releases of the whole autopilot;
		// a paused or partial autopilot leaves everything as it is (the
		// deletion Guard refuses too, on the fresh HCO as well).
		results := r.reaper.Reap(ctx, r.opts.Tombstones, engine.GuardFor(rc), intent.guard)
		r.recordTombstones(hco, results)
		rc = rc.WithoutPeers(deletedBy(results))
	}

	want := r.baseWatches(rc)
	var retry time.Duration
	eval := r.evaluator.Plan(ctx, r.opts.Catalog, rc, r.live, func(d *engine.Decision, rc *rendercontext.RenderContext) engine.StepResult {
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
			res = r.syncer.Sync(ctx, d)
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
		r.record(ctx, hco, d, res)
		if d.Live != nil && res.Object == nil && !factKinds[d.Live.GroupVersionKind()] &&
			d.Live.GetLabels()[annotations.ManagedByLabel] != annotations.ManagedByValue {
			res.RetryAfter = minPositive(res.RetryAfter, r.opts.UnwatchedPoll)
		}
		retry = minPositive(retry, res.RetryAfter)
		// The HCO comes first; everything after renders from its effective
		// state: the server's copy after a write, else the live one. A
		// write that did not land leaves dependents as they are (Plan).
		out := engine.StepResult{HCO: res.Object}
		if res.Outcome == engine.Throttled || res.Outcome == engine.Failed {
			out.Unconverged = string(res.Outcome) + ": " + res.Reason
		}
		return out
	})
	r.recordNotices(ctx, hco, r.evaluator.Notices(r.opts.Catalog, eval))
	return r.finish(ctx, hco.GetResourceVersion(), want, retry)
}

// finish updates the watches and says when to come back: the soonest
// per-asset retry, else the resync.
func (r *Reconciler) finish(ctx context.Context, hcoRV string, want map[schema.GroupVersionKind]bool, retry time.Duration) (reconcile.Result, error) {
	var err error
	if werr := r.watches.sync(ctx, want); werr != nil {
		err = fmt.Errorf("update watches: %w", werr)
		log.FromContext(ctx).Error(werr, "cannot update watches; retrying", "action", "retry")
		retry = minPositive(retry, r.retries.failed("watches"))
	} else {
		r.retries.succeeded("watches")
	}
	r.status.reconciled(err, hcoRV)
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

// baseWatches are the kinds watched regardless of assets: the HCO and the
// OpenShift config objects the context reads, when installed.
func (r *Reconciler) baseWatches(rc *rendercontext.RenderContext) map[schema.GroupVersionKind]bool {
	// StorageClasses are built in (no CRD); templates read the default class.
	want := map[schema.GroupVersionKind]bool{rendercontext.StorageClassGVK: true}
	for _, gvk := range factGVKs {
		if rc.CRDFor(gvk.GroupKind()) != nil && rc.KindAvailable(gvk) {
			want[gvk] = true
		}
	}
	return want
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
	if held, wait := r.pools.hold(d, res); wait {
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

// Preview evaluates every asset now, from the caches, without writing: what
// the next reconcile would decide. The debug endpoints serve it.
func (r *Reconciler) Preview(ctx context.Context) (engine.Evaluation, error) {
	facts, err := r.facts(ctx)
	if err != nil {
		return engine.Evaluation{}, err
	}
	rc := rendercontext.New(facts)
	return r.evaluator.Plan(ctx, r.opts.Catalog, rc, r.live, engine.Preview), nil
}

// Notices lists what on the HCO the autopilot does not act on as written,
// from an evaluation (Preview): what the next reconcile reports.
func (r *Reconciler) Notices(eval engine.Evaluation) []engine.Notice {
	return r.evaluator.Notices(r.opts.Catalog, eval)
}

// CachesSynced reports, within ctx's deadline, whether every informer of
// both caches the reconciler reads has synced, naming the kinds that have
// not when it knows them.
func (r *Reconciler) CachesSynced(ctx context.Context) error {
	managed := r.caches.managed.WaitForCacheSync(ctx)
	facts := r.caches.facts.WaitForCacheSync(ctx)
	if managed && facts {
		return nil
	}
	if u := r.gate.unsynced(); len(u) > 0 {
		sort.Strings(u)
		return fmt.Errorf("watches not synced: %s", strings.Join(u, ", "))
	}
	return fmt.Errorf("caches not synced")
}

// Catalog returns the catalog the reconciler runs.
func (r *Reconciler) Catalog() *catalog.Catalog { return r.opts.Catalog }

// Tombstones returns the tombstones with their last status.
func (r *Reconciler) Tombstones() []tombstone.Result {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	return append([]tombstone.Result(nil), r.status.tombstones...)
}

// ThrottleState returns the write budget of an object ("Kind/namespace/name").
func (r *Reconciler) ThrottleState(key string) throttle.State { return r.syncer.Throttle.State(key) }

// Health summarizes the reconciler for /debug/health.
type Health struct {
	LastReconcile time.Time `json:"lastReconcile"`
	// HCOResourceVersion is the HCO resourceVersion the last finished
	// reconcile started from.
	HCOResourceVersion string `json:"hcoResourceVersion,omitempty"`
	LastError          string `json:"lastError,omitempty"`
	// Idle says why nothing is written or deleted, when that is so.
	Idle *IdleStatus `json:"idle,omitempty"`
	// Unsynced lists kinds whose watch has not synced: their assets fail,
	// the others converge.
	Unsynced  []string `json:"unsyncedKinds,omitempty"`
	Watched   []string `json:"watchedKinds"`
	Throttled int      `json:"throttledObjects"`
}

// Health reports the last reconcile and what is watched.
func (r *Reconciler) Health() Health {
	r.status.mu.Lock()
	h := Health{LastReconcile: r.status.lastReconcile, HCOResourceVersion: r.status.hcoRV, LastError: r.status.lastError}
	if r.status.idle.Reason != "" {
		i := r.status.idle
		h.Idle = &i
	}
	r.status.mu.Unlock()
	h.Unsynced = r.gate.unsynced()
	sort.Strings(h.Unsynced)
	for _, gvk := range r.watches.list() {
		h.Watched = append(h.Watched, gvk.String())
	}
	sort.Strings(h.Watched)
	h.Throttled = r.syncer.Throttle.Throttled()
	return h
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

// facts reads the render context's inputs from the caches, and the operand
// images from the autopilot's own environment (its Deployment's, as OLM
// sets it).
func (r *Reconciler) facts(ctx context.Context) (rendercontext.Facts, error) {
	f, err := gather.Facts(ctx, r.cache, r.opts.Namespace, r.reads)
	f.Images = rendercontext.ImagesFromEnv(os.Environ())
	if r.opts.Structures != nil {
		f.Structures = r.opts.Structures.Snapshot()
	}
	return f, err
}
