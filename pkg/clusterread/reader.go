// Package clusterread is how the autopilot reads the cluster: two caches
// (managed objects, label-filtered; facts, read whole), one narrow
// informer per object a template looks up, live reads where a cache miss
// cannot mean "absent", a sync gate so one kind that cannot be listed
// never stalls the others, warm-up at start, and the watches that follow
// the kinds a reconcile needs. The controller sees one Reader.
package clusterread

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodefacts"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// Options configure a Reader.
type Options struct {
	// Namespace of the HCO (namespaced facts are read only there).
	Namespace string
	Catalog   *catalog.Catalog
	// Kinds are the kinds the assets manage, warmed at start.
	Kinds []schema.GroupVersionKind
	// SyncTimeout bounds how long a read waits for a kind's informer to
	// sync before that kind's reads fail (the others go on).
	SyncTimeout time.Duration
	// Structures is what the cache's CRD transform keeps of the schemas it
	// drops (CacheOptions); nil: the CRDs' own schemas are read.
	Structures *structure.Store
	// Objects are single objects read and watched beyond the catalog's
	// reads, each by its own narrow informer (the fleet status ConfigMap):
	// read from a cache, a change by anyone wakes a reconcile.
	Objects []rendercontext.ObjectKey
}

// Reader reads the cluster for the reconciler: cached reads routed to the
// cache holding each kind, live reads, the facts of one reconcile, and the
// watches that wake it.
type Reader struct {
	caches
	direct     client.Reader
	namespace  string
	reads      []rendercontext.ObjectKey
	kinds      []schema.GroupVersionKind
	structures *structure.Store
	watches    *watches
	warmed     atomic.Bool
}

// New builds the Reader on mgr, whose cache must have been built with
// CacheOptions: it adds the facts cache and one cache per declared lookup
// to the manager, and warms every kind's informer when the manager starts.
func New(mgr manager.Manager, opts Options) (*Reader, error) {
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
	r := &Reader{
		caches:     caches{managed: mgr.GetCache(), facts: facts, gate: newSyncGate(opts.SyncTimeout), nodes: nodefacts.New()},
		direct:     mgr.GetAPIReader(),
		namespace:  opts.Namespace,
		reads:      rendercontext.Reads(opts.Catalog),
		kinds:      opts.Kinds,
		structures: opts.Structures,
	}
	// The shipped autopilot's Deployment is read by name from its own
	// watch: the label-filtered cache would answer "absent".
	keys := append(append(slices.Clone(r.reads), opts.Objects...), gather.ShippedKey(opts.Namespace))
	if r.lookups, err = newLookups(mgr, keys, func() *syncGate { return newSyncGate(opts.SyncTimeout) }); err != nil {
		return nil, err
	}
	// Started with the controller (after leader election, when enabled).
	if err := mgr.Add(manager.RunnableFunc(r.warmAtStart)); err != nil {
		return nil, err
	}
	return r, nil
}

// Direct reads the API server itself, bypassing every cache: for the
// rare read that must see a person's last word (before a deletion).
func (r *Reader) Direct() client.Reader { return r.direct }

// Facts reads one reconcile's render-context inputs from the caches, with
// the CRD structures the cache transform recorded.
func (r *Reader) Facts(ctx context.Context) (rendercontext.Facts, error) {
	f, err := gather.Facts(ctx, r.caches, r.namespace, r.reads)
	if r.structures != nil {
		f.Structures = r.structures.Snapshot()
	}
	return f, err
}

// Sources are the watches that exist from the start: CRDs (a soft
// dependency arriving or leaving) and Nodes, which matter only for the
// facts their classes give (pkg/nodefacts): a node event that changes none
// enqueues nothing, one that does enqueues hco after nodeDelay. Their
// initial lists trigger the first reconcile.
func (r *Reader) Sources(h handler.EventHandler, hco reconcile.Request, nodeDelay time.Duration) []source.Source {
	return []source.Source{
		source.Kind[client.Object](r.managed, &apiextensionsv1.CustomResourceDefinition{}, h),
		&nodefacts.Source{Cache: r.managed, Index: r.nodes, Request: hco, Delay: nodeDelay},
	}
}

// Bind gives the Reader the controller whose watches it manages (Watch,
// WatchLookups), each event handled by h.
func (r *Reader) Bind(c controller.Controller, h handler.EventHandler) {
	r.watches = &watches{ctrl: c, caches: r.caches, handler: h, active: map[schema.GroupVersionKind]bool{}}
}

// Watch makes the watched kinds exactly want (see FactWatches).
func (r *Reader) Watch(ctx context.Context, want map[schema.GroupVersionKind]bool) error {
	return r.watches.sync(ctx, want)
}

// WatchLookups watches each declared object whose kind is served, and
// stops the informers of those that are not.
func (r *Reader) WatchLookups(ctx context.Context, served func(rendercontext.ObjectKey) bool) {
	r.lookups.watch(ctx, r.watches.ctrl, r.watches.handler, served)
}

// Watching reports whether gvk is watched (its informer is running).
func (r *Reader) Watching(gvk schema.GroupVersionKind) bool { return r.watches.has(gvk) }

// WatchedKinds lists the watched kinds, sorted.
func (r *Reader) WatchedKinds() []string {
	var out []string
	for _, gvk := range r.watches.list() {
		out = append(out, gvk.String())
	}
	sort.Strings(out)
	return out
}

// Unsynced lists, sorted, the kinds whose watch has not synced: their
// reads fail, the others' go on.
func (r *Reader) Unsynced() []string {
	u := r.gate.unsynced()
	sort.Strings(u)
	return u
}

// Synced reports, within ctx's deadline, whether every informer of both
// caches has synced, naming the kinds that have not when it knows them.
func (r *Reader) Synced(ctx context.Context) error {
	managed := r.managed.WaitForCacheSync(ctx)
	facts := r.facts.WaitForCacheSync(ctx)
	if managed && facts {
		return nil
	}
	if u := r.Unsynced(); len(u) > 0 {
		return fmt.Errorf("watches not synced: %s", strings.Join(u, ", "))
	}
	return fmt.Errorf("caches not synced")
}

// FactWatches are the kinds watched regardless of assets: the HCO and the
// OpenShift config objects the context reads, when installed, and the
// StorageClasses (built in) templates read for the default class.
func FactWatches(rc *rendercontext.RenderContext) map[schema.GroupVersionKind]bool {
	want := map[schema.GroupVersionKind]bool{rendercontext.StorageClassGVK: true}
	for _, gvk := range factGVKs {
		if rc.CRDFor(gvk.GroupKind()) != nil && rc.KindAvailable(gvk) {
			want[gvk] = true
		}
	}
	return want
}

// IsFact reports whether gvk is read whole, whoever owns it (the facts
// cache), rather than only the autopilot's labelled objects.
func IsFact(gvk schema.GroupVersionKind) bool { return factKinds[gvk] }

// Follow calls f at start and whenever the object k (declared in
// Options.Objects) or a CRD changes, from the caches: for what every
// replica serves, leader or not (the cluster's TLS profile). The object's
// own informer is added once served (read from the CRD cache) says its
// kind is served, so a cluster without the kind costs no request. It
// returns when ctx ends.
func (r *Reader) Follow(ctx context.Context, k rendercontext.ObjectKey, served func(context.Context) bool, f func(context.Context)) error {
	lk := r.lookups.byKey[k]
	if lk == nil {
		return fmt.Errorf("%s is not a declared object", k)
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	events := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	crds, err := r.managed.GetInformer(ctx, &apiextensionsv1.CustomResourceDefinition{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watch CRDs: %w", err)
	}
	if _, err := crds.AddEventHandler(events); err != nil {
		return err
	}
	// watching is the informer the handler is on: the leader's watches
	// may remove and re-create it (a kind seen not served), and the
	// handler goes with the informer it was added to.
	var watching cache.Informer
	poke()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		if served(ctx) {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(k.GVK)
			if inf, err := lk.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err == nil && inf != watching {
				if _, err := inf.AddEventHandler(events); err == nil {
					watching = inf
					lk.mu.Lock()
					lk.started = true
					lk.mu.Unlock()
				}
			}
		}
		f(ctx)
	}
}
