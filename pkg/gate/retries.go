package gate

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// retries gives each failing asset (or step) its own exponential backoff,
// so one failure never delays the others: the reconcile comes back at the
// soonest of all requested times instead of failing as a whole. An asset
// in backoff is held out of every reconcile until its time comes, whatever
// triggered the reconcile (an HCO edit, another object's event): no read,
// no write, so a refused create costs nothing while it waits.
type retries struct {
	limiter workqueue.TypedRateLimiter[string]
	now     func() time.Time

	mu   sync.Mutex
	next map[string]time.Time
}

func newRetries() *retries {
	return &retries{
		// 1s, 2s, 4s, ... up to 5 minutes, as client-go paces a workqueue.
		limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
		now:     time.Now,
		next:    map[string]time.Time{},
	}
}

// failed counts a failure of key and returns how long until its next try.
func (r *retries) failed(key string) time.Duration {
	d := r.limiter.When(key)
	r.mu.Lock()
	r.next[key] = r.now().Add(d)
	r.mu.Unlock()
	return d
}

// succeeded resets key's backoff.
func (r *retries) succeeded(key string) {
	r.limiter.Forget(key)
	r.mu.Lock()
	delete(r.next, key)
	r.mu.Unlock()
}

// held reports how long key must still wait before its next try.
func (r *retries) held(key string) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, ok := r.next[key]
	if !ok {
		return 0, false
	}
	left := next.Sub(r.now())
	return left, left > 0
}
