package nodefacts

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
)

// Source is the controller's node watch: it keeps Index and enqueues
// Request only when a node event changed a fact the last reconcile read.
// Such an event is enqueued Delay later, so a burst (NFD relabelling every
// node after a restart) costs one reconcile per Delay, not one per node;
// the first reconcile is never delayed.
type Source struct {
	Cache   cache.Cache
	Index   *Index
	Request reconcile.Request
	Delay   time.Duration

	// started yields the registration's error once it is made (then
	// reg is set); closed after.
	started chan error
	reg     toolscache.ResourceEventHandlerRegistration
}

// Start registers the event handler on the node informer, in the
// background: getting the informer waits for its first list, and a
// source's Start must not (WaitForSync does, with the controller's
// deadline).
func (s *Source) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.started = make(chan error, 1)
	go func() {
		reg, err := s.register(ctx, q)
		if err == nil {
			s.Index.mu.Lock()
			s.Index.synced = reg.HasSynced
			s.Index.mu.Unlock()
			s.reg = reg
		}
		s.started <- err
		close(s.started)
	}()
	return nil
}

func (s *Source) register(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) (toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := s.Cache.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	enqueue := func(changed bool) {
		if !changed {
			metrics.NodeEvents.WithLabelValues("ignored").Inc()
			return
		}
		metrics.NodeEvents.WithLabelValues("enqueued").Inc()
		s.Index.mu.RLock()
		first := !s.Index.readOnce
		s.Index.mu.RUnlock()
		if first || s.Delay <= 0 {
			q.Add(s.Request)
			return
		}
		// The delaying queue keeps one entry per request, at the earliest
		// time asked: the events of a burst share it.
		q.AddAfter(s.Request, s.Delay)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				enqueue(s.Index.Set(n))
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				enqueue(s.Index.Set(n))
			}
		},
		DeleteFunc: func(obj any) {
			name := ""
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj, name = d.Obj, d.Key // a Node's key is its name
			}
			if n, ok := obj.(*corev1.Node); ok {
				name = n.Name
			}
			if name != "" {
				enqueue(s.Index.Delete(name))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	return reg, nil
}

// WaitForSync waits until every node of the initial list is counted: the
// controller starts its workers only then, so no reconcile reads a partial
// index.
func (s *Source) WaitForSync(ctx context.Context) error {
	if s.started == nil {
		return fmt.Errorf("node watch not started")
	}
	select {
	case err := <-s.started:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return fmt.Errorf("node watch did not start: %w", ctx.Err())
	}
	if s.reg == nil {
		return fmt.Errorf("node watch not started")
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), s.reg.HasSynced) {
		return fmt.Errorf("node watch did not sync: %w", ctx.Err())
	}
	return nil
}

func (s *Source) String() string { return "nodes (class counts)" }
