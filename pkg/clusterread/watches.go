package clusterread

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// watches starts and stops informers for managed kinds as their CRDs come
// and go, without restarting the process.
type watches struct {
	ctrl    controller.Controller
	caches  caches
	handler handler.EventHandler

	mu     sync.Mutex
	active map[schema.GroupVersionKind]bool
}

// changed lets through what can change a verdict: spec (generation),
// labels and annotations; status-only updates are ignored. Kinds without a
// generation (ConfigMaps, ServiceAccounts, RBAC bindings: no status either)
// pass every update, or a change of their data would go unseen.
var changed = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return e.ObjectNew != nil && e.ObjectNew.GetGeneration() == 0 }})

// statusRead are kinds whose status templates read (a StorageProfile's
// claimPropertySets): every change counts.
var statusRead = map[schema.GroupVersionKind]bool{rendercontext.StorageProfileGVK: true}

func predicateFor(gvk schema.GroupVersionKind) predicate.Predicate {
	if statusRead[gvk] {
		return predicate.ResourceVersionChangedPredicate{}
	}
	return changed
}

// sync makes the watched set equal to want.
func (w *watches) sync(ctx context.Context, want map[schema.GroupVersionKind]bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gvk := range want {
		if w.active[gvk] {
			continue
		}
		if err := w.ctrl.Watch(source.Kind[client.Object](w.caches.forGVK(gvk), unstructuredOf(gvk), w.handler, predicateFor(gvk))); err != nil {
			return err
		}
		w.active[gvk] = true
		log.FromContext(ctx).V(1).Info("watching a kind", "action", "watch", "group", gvk.Group, "version", gvk.Version, "kind", gvk.Kind)
	}
	for gvk := range w.active {
		if want[gvk] {
			continue
		}
		if err := w.caches.forGVK(gvk).RemoveInformer(ctx, unstructuredOf(gvk)); err != nil {
			return err
		}
		delete(w.active, gvk)
		w.caches.gate.forget(gvk)
		log.FromContext(ctx).V(1).Info("stopped watching a kind: its CRD is gone or no active asset needs it", "action", "unwatch", "group", gvk.Group, "version", gvk.Version, "kind", gvk.Kind)
	}
	return nil
}

// has reports whether gvk is watched (its informer is running).
func (w *watches) has(gvk schema.GroupVersionKind) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.active[gvk]
}

// list returns the watched kinds.
func (w *watches) list() []schema.GroupVersionKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]schema.GroupVersionKind, 0, len(w.active))
	for gvk := range w.active {
		out = append(out, gvk)
	}
	return out
}
