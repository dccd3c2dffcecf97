package controller

import (
	"sync"
	"time"
)

// retries gives each failing asset (or step) its own exponential backoff,
// so one failure never delays the others: the reconcile comes back at the
// soonest of all requested times instead of failing as a whole.
type retries struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[string]int
}

func newRetries() *retries {
	return &retries{base: time.Second, max: 5 * time.Minute, failures: map[string]int{}}
}

// failed counts a failure of key and returns how long until its next try:
// 1s, 2s, 4s, ... up to 5 minutes.
func (r *retries) failed(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.failures[key]
	r.failures[key] = n + 1
	d := r.base
	for i := 0; i < n && d < r.max; i++ {
		d *= 2
	}
	return min(d, r.max)
}

// succeeded resets key's backoff.
func (r *retries) succeeded(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, key)
}
