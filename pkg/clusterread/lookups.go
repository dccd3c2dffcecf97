package clusterread

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// lookups serves the objects templates read (the catalog's reads), each
// from its own informer narrowed to that one object by a field selector:
// reading another operator's object costs no request in steady state, and
// the cache never holds the rest of its kind.
type lookups struct {
	byKey map[rendercontext.ObjectKey]*lookup
}

type lookup struct {
	cache cache.Cache
	gate  *syncGate

	mu      sync.Mutex
	watched bool
	// started: a read created the informer (removing one that was never
	// started would cost a discovery request on every reconcile).
	started bool
}

func newLookups(mgr manager.Manager, keys []rendercontext.ObjectKey, gate func() *syncGate) (*lookups, error) {
	l := &lookups{byKey: map[rendercontext.ObjectKey]*lookup{}}
	for _, k := range keys {
		opts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()}
		one := fields.OneTermEqualSelector("metadata.name", k.Name)
		if k.Namespace != "" {
			opts.DefaultNamespaces = map[string]cache.Config{k.Namespace: {FieldSelector: one}}
		} else {
			opts.DefaultFieldSelector = one
		}
		c, err := cache.New(mgr.GetConfig(), opts)
		if err != nil {
			return nil, fmt.Errorf("create cache for %s: %w", k, err)
		}
		if err := mgr.Add(c); err != nil {
			return nil, err
		}
		l.byKey[k] = &lookup{cache: c, gate: gate()}
	}
	return l, nil
}

// get reads a declared object; ok is false for objects not declared.
func (l *lookups) get(ctx context.Context, k rendercontext.ObjectKey, obj client.Object) (ok bool, err error) {
	lk := l.byKey[k]
	if lk == nil {
		return false, nil
	}
	lk.mu.Lock()
	lk.started = true
	lk.mu.Unlock()
	if err := lk.gate.wait(ctx, lk.cache, obj); err != nil {
		return true, err
	}
	return true, lk.cache.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, obj)
}

// watch makes a change of each served object enqueue the HCO, and stops
// the informers of kinds that are no longer served.
func (l *lookups) watch(ctx context.Context, c controller.Controller, h handler.EventHandler, served func(rendercontext.ObjectKey) bool) {
	for k, lk := range l.byKey {
		lk.mu.Lock()
		switch want := served(k); {
		case want && !lk.watched:
			// Templates read looked-up objects' status too (a fence
			// template's validation): every change counts.
			if err := c.Watch(source.Kind[client.Object](lk.cache, unstructuredOf(k.GVK), h, predicate.ResourceVersionChangedPredicate{})); err != nil {
				log.FromContext(ctx).Error(err, "cannot watch a declared object; retrying", "action", "retry", "kind", k.GVK.Kind, "namespace", k.Namespace, "name", k.Name)
			} else {
				lk.watched = true
			}
		case !want && (lk.watched || lk.started):
			// Also an informer a read started without a watch: a kind
			// that is not served must not keep listing.
			if err := lk.cache.RemoveInformer(ctx, unstructuredOf(k.GVK)); err == nil {
				lk.watched, lk.started = false, false
				lk.gate.forget(k.GVK)
			}
		}
		lk.mu.Unlock()
	}
}
