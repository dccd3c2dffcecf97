// Package controller runs the autopilot: one reconciler keyed on the HCO
// that applies the golden HCO config, reads the effective HCO back, and
// syncs every other asset from it. Reading the cluster is
// pkg/clusterread's job and reporting pkg/report's; this package wires
// them (Setup) and walks one reconcile (Reconcile).
package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-platform-autopilot/pkg/admission"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/clusterread"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tlsprofile"
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
	// drops (clusterread.CacheOptions); nil: the CRDs' own schemas are read.
	Structures *structure.Store
	// Now is the clock of disruption windows and pool waits (tests shift
	// it); nil is time.Now.
	Now func() time.Time
	// Images are the operand images, by name, as the autopilot's
	// Deployment gives them (rendercontext.ImagesFromEnv in its process).
	Images map[string]string
	// TLS, when set, is the profile the TLS endpoints serve: the
	// reconciler follows APIServer/cluster's.
	TLS *tlsprofile.Served
	// StatusNamespace is the autopilot's own namespace, where it keeps the
	// fleet status ConfigMap (pkg/fleetstatus); empty: no status is kept.
	StatusNamespace string
	// Version is the autopilot's version, in the fleet status.
	Version string
}

// Reconciler is the autopilot's single reconciler.
type Reconciler struct {
	opts      Options
	reader    *clusterread.Reader
	report    *report.Reporter
	evaluator *engine.Evaluator
	syncer    *apply.Syncer
	reaper    *tombstone.Reaper
	writer    client.Client
	// gate judges every write and delete and holds every clock they need.
	gate    *gate.Gate
	impacts *impacts
	fleet   *fleetstatus.Writer
	// kinds is the kind each asset manages (watched while it is paused or
	// backing off).
	kinds map[string]schema.GroupVersionKind
	// admission is the state of the policy bounding its own writes.
	admission admissionView
	// tlsErr is the last TLS profile problem logged (nil: none).
	tlsErr atomic.Pointer[string]
	// started: the first reconcile finished.
	started sync.Once
}

// Setup registers the reconciler with mgr, whose cache must have been built
// with clusterread.CacheOptions.
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
	kinds := assetKinds(opts.Catalog, opts.Renderer, opts.Namespace)
	var objects []rendercontext.ObjectKey
	if opts.StatusNamespace != "" {
		// The fleet status is compared with the cluster's copy, read from
		// its own narrow watch: no request in steady state, and a change
		// by anyone else wakes a reconcile that undoes it.
		objects = append(objects, rendercontext.ObjectKey{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: opts.StatusNamespace, Name: fleetstatus.Name})
	}
	// The admission policy bounding its writes, watched by name.
	objects = append(objects, admission.Keys()...)
	if opts.TLS != nil {
		// The cluster's TLS profile, for the endpoints it serves.
		objects = append(objects, rendercontext.ObjectKey{GVK: tlsprofile.APIServerGVK, Name: tlsprofile.APIServerName})
	}
	reader, err := clusterread.New(mgr, clusterread.Options{Namespace: opts.Namespace, Catalog: opts.Catalog,
		Kinds: kindList(kinds), SyncTimeout: opts.SyncTimeout, Structures: opts.Structures, Objects: objects})
	if err != nil {
		return nil, err
	}
	g := gate.New(gate.Config{Throttle: opts.Throttle, SettlePeriod: opts.SettlePeriod, Resync: opts.Resync, Now: opts.Now, Catalog: opts.Catalog})
	r := &Reconciler{
		opts:      opts,
		reader:    reader,
		report:    report.New(mgr.GetEventRecorder(annotations.FieldManager)),
		evaluator: &engine.Evaluator{Renderer: opts.Renderer},
		syncer:    &apply.Syncer{Client: mgr.GetClient(), Gate: g, Now: opts.Now},
		reaper:    &tombstone.Reaper{Cache: reader, Reader: reader.Direct(), Writer: mgr.GetClient(), Watched: reader.Watching, Backoff: g},
		writer:    mgr.GetClient(),
		gate:      g,
		kinds:     kinds,
	}
	r.evaluator.Hold = r.backingOff
	if opts.TLS != nil {
		if err := mgr.Add(tlsFollower{r}); err != nil {
			return nil, err
		}
	}
	r.impacts = newImpacts(reader.Direct(), r.now)
	if opts.StatusNamespace != "" {
		r.fleet = &fleetstatus.Writer{Reader: reader, Client: mgr.GetClient(), Namespace: opts.StatusNamespace, Version: opts.Version, Now: opts.Now, Budget: g.Budget, Refund: g.Refund}
	}
	hco := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: opts.Namespace, Name: rendercontext.HCOName}}
	toHCO := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{hco}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("autopilot")
	for _, src := range reader.Sources(toHCO, hco, settle.Step(opts.SettlePeriod)) {
		b = b.WatchesRawSource(src)
	}
	c, err := b.Build(r)
	if err != nil {
		return nil, err
	}
	reader.Bind(c, toHCO)
	return r, nil
}

// assetKinds renders every asset once, without facts, for the kind it
// manages (a template's kind does not depend on the cluster).
func assetKinds(cat *catalog.Catalog, r *render.Renderer, namespace string) map[string]schema.GroupVersionKind {
	out := map[string]schema.GroupVersionKind{}
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.RenderOrHead(a.Path, &rendercontext.RenderContext{Namespace: namespace, AssumeAllKinds: true}, a.Params)
		if err == nil {
			out[a.Name] = u.GroupVersionKind()
		}
	}
	return out
}

func kindList(kinds map[string]schema.GroupVersionKind) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, gvk := range kinds {
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}

// backingOff holds an asset whose last failure's backoff has not expired
// out of the reconcile (engine.Evaluator.Hold).
func (r *Reconciler) backingOff(a *catalog.Asset) (string, bool) {
	v := r.gate.Attempt(a.Name)
	if v.Go {
		return "", false
	}
	last, _ := r.report.Last(a.Name)
	return fmt.Sprintf("retrying in %s: %s", v.RetryAfter.Round(time.Second), last.Reason), true
}
