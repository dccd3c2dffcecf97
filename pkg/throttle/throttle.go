// Package throttle bounds corrective writes per object with token buckets,
// so the autopilot never hot-loops against another actor that keeps
// reverting a field. An empty bucket means "stop writing, report, wait";
// the bucket refills by itself, so writing resumes once the fight stops.
package throttle

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config sizes every bucket.
type Config struct {
	// Burst corrective writes are allowed back to back.
	Burst int
	// Refill is the time to earn one more write.
	Refill time.Duration
	// IdleTTL drops buckets not used for this long (they are full again by then).
	IdleTTL time.Duration
}

// DefaultConfig allows 5 quick corrections, then one every 2 minutes.
var DefaultConfig = Config{Burst: 5, Refill: 2 * time.Minute, IdleTTL: time.Hour}

// Throttle holds one bucket per object key. Safe for concurrent use.
type Throttle struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	lim       *rate.Limiter
	lastUsed  time.Time
	throttled bool
	// taken: the last Allow took a token that Refund may give back.
	taken bool
}

// New returns a Throttle; zero fields of cfg take DefaultConfig's values.
func New(cfg Config) *Throttle {
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultConfig.Burst
	}
	if cfg.Refill <= 0 {
		cfg.Refill = DefaultConfig.Refill
	}
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = DefaultConfig.IdleTTL
	}
	return &Throttle{cfg: cfg, now: time.Now, buckets: map[string]*bucket{}}
}

// Refill is how long one more write takes to earn.
func (t *Throttle) Refill() time.Duration { return t.cfg.Refill }

// Allow takes a token for a write to key. When none is left it returns
// false and how long until one is.
func (t *Throttle) Allow(key string) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.gc(now)
	b := t.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(rate.Every(t.cfg.Refill), t.cfg.Burst)}
		t.buckets[key] = b
	}
	b.lastUsed = now
	if b.lim.AllowN(now, 1) {
		b.throttled, b.taken = false, true
		return true, 0
	}
	b.throttled, b.taken = true, false
	return false, t.untilToken(b, now)
}

// Refund gives back the token key's last Allow took, for a write that was
// not made (the API server refused it): a refused write is no fight.
func (t *Throttle) Refund(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.buckets[key]; b != nil && b.taken {
		// A negative take adds the token back (the limiter caps its
		// tokens at the burst when it next refills); Reservation.CancelAt
		// cannot, once the token's time has passed. TestRefund holds the
		// limiter to it.
		b.lim.AllowN(t.now(), -1)
		b.taken = false
	}
}

// untilToken is how long until b holds a whole token, computed without
// reserving one (a reservation would move the limiter's clock).
func (t *Throttle) untilToken(b *bucket, now time.Time) time.Duration {
	tokens := b.lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(t.cfg.Refill))
}

// Wait reports how long until key may write again, without taking a
// token: zero when a write is allowed now. While it is positive, nothing
// is sent for the object, not even a dry-run.
func (t *Throttle) Wait(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[key]
	if b == nil {
		return 0
	}
	now := t.now()
	wait := t.untilToken(b, now)
	if wait > 0 {
		b.throttled, b.lastUsed = true, now
	}
	return wait
}

// State describes one object's bucket.
type State struct {
	Tokens    float64 `json:"tokens"`
	Throttled bool    `json:"throttled"`
}

// State returns key's bucket state (a full bucket if it has none).
func (t *Throttle) State(key string) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[key]
	if b == nil {
		return State{Tokens: float64(t.cfg.Burst)}
	}
	return State{Tokens: b.lim.TokensAt(t.now()), Throttled: b.throttled}
}

// Throttled counts objects whose last write attempt was refused and whose
// budget has not refilled since.
func (t *Throttle) Throttled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	n := 0
	for _, b := range t.buckets {
		if b.throttled && b.lim.TokensAt(now) < 1 {
			n++
		}
	}
	return n
}

// Forget drops key's bucket, for objects that are gone.
func (t *Throttle) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.buckets, key)
}

func (t *Throttle) gc(now time.Time) {
	for k, b := range t.buckets {
		if now.Sub(b.lastUsed) > t.cfg.IdleTTL {
			delete(t.buckets, k)
		}
	}
}
