package clusterread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNotSynced marks a read of a kind whose watch has not synced: the kind
// cannot be listed (forbidden, a CRD whose conversion webhook is down, a
// terminating CRD). Only the assets of that kind fail; nothing reads the
// miss as "absent".
var ErrNotSynced = errors.New("watch not synced")

// syncGate keeps one broken kind from stalling the single worker. A cache
// read blocks until the kind's informer has synced, and an informer that
// cannot list never does. The first read of a kind waits at most timeout;
// while the kind stays unsynced, later reads fail at once, so a reconcile
// pays the wait once, not once per asset and pass.
type syncGate struct {
	timeout time.Duration

	mu     sync.Mutex
	waited map[schema.GroupVersionKind]time.Time // unsynced kinds, since when
}

func newSyncGate(timeout time.Duration) *syncGate {
	return &syncGate{timeout: timeout, waited: map[schema.GroupVersionKind]time.Time{}}
}

func (g *syncGate) wait(ctx context.Context, c cache.Cache, obj client.Object) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if inf.HasSynced() {
		g.mu.Lock()
		delete(g.waited, gvk)
		g.mu.Unlock()
		return nil
	}
	g.mu.Lock()
	since, waitedBefore := g.waited[gvk]
	if !waitedBefore {
		since = time.Now()
		g.waited[gvk] = since
	}
	g.mu.Unlock()
	if !waitedBefore {
		wctx, cancel := context.WithTimeout(ctx, g.timeout)
		defer cancel()
		if waitSynced(wctx, inf.HasSynced) {
			g.mu.Lock()
			delete(g.waited, gvk)
			g.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("%w: %s could not be listed and watched for %s (is the list forbidden, its CRD terminating, or its conversion webhook down?)",
		ErrNotSynced, gvk.GroupKind(), time.Since(since).Round(time.Second))
}

// syncPoll is how often a wait for an informer's sync looks again.
// client-go's WaitForCacheSync looks every 100 ms; HasSynced is a cheap
// read, and at a cold start the reconcile waits for several kinds in turn.
const syncPoll = 5 * time.Millisecond

// waitSynced reports whether synced holds before ctx ends.
func waitSynced(ctx context.Context, synced toolscache.InformerSynced) bool {
	t := time.NewTicker(syncPoll)
	defer t.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// unsynced lists the kinds whose watch has not synced.
func (g *syncGate) unsynced() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.waited))
	for gvk := range g.waited {
		out = append(out, gvk.GroupKind().String())
	}
	return out
}

// forget drops a kind whose watch was removed: its next read waits anew.
func (g *syncGate) forget(gvk schema.GroupVersionKind) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.waited, gvk)
}
