// Package settle holds back a reboot-causing write that a derived fact
// (a node label, a capacity, the topology) asks for, until that fact has
// held for a settle period. A write a person asked for (an HCO edit) or a
// new autopilot version brings is not held: only a change of facts is.
//
// A fact is known by its print, a hash of the facts an asset renders from,
// stamped on the object at each write. The live object's stamp tells, even
// after a restart, whether a pending write comes from changed facts. An
// object not created yet has no stamp: its creation waits only when this
// process saw the asset's facts change.
package settle

import (
	"sync"
	"time"
)

// DefaultPeriod is how long a fact must hold before a reboot it asks for:
// longer than an NFD relabel or a node drain, shorter than an admin's
// patience.
const DefaultPeriod = 5 * time.Minute

// HoldFactor bounds one episode of waiting: a fact that keeps changing
// holds a write at most this many periods, then the write goes with the
// facts of that moment (every wait has a deadline; a label that flaps for
// half an hour is the cluster's state, not a flicker).
const HoldFactor = 6

// Tracker remembers, per asset, the print it last saw and since when.
type Tracker struct {
	Period time.Duration
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]entry
}

type entry struct {
	print   string
	since   time.Time
	changed bool // this process saw the print change
	// held is when the current episode of waiting began (zero: none).
	held time.Time
}

// New returns a tracker holding fact-driven writes for period.
func New(period time.Duration, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{Period: period, now: now, seen: map[string]entry{}}
}

// Observe records asset's current print (also while the asset is
// inactive: a fact that turns it on is a change too).
func (t *Tracker) Observe(asset, print string) {
	t.observe(asset, print)
}

func (t *Tracker) observe(asset, print string) entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.seen[asset]
	if !ok || e.print != print {
		e = entry{print: print, since: t.now(), changed: ok, held: e.held}
		t.seen[asset] = e
	}
	return e
}

// Wait records asset's current print and says how long a write must still
// wait: livePrint is the stamp of the live object ("" when it has none,
// written before stamps or by someone else), live whether it exists.
func (t *Tracker) Wait(asset, print, livePrint string, live bool) (time.Duration, bool) {
	e := t.observe(asset, print)
	now := t.now()
	factDriven := e.changed
	if live {
		factDriven = livePrint != "" && livePrint != print
	}
	if !factDriven || t.Period <= 0 {
		t.episode(asset, time.Time{})
		return 0, false
	}
	if e.held.IsZero() {
		e.held = now
		t.episode(asset, now)
	}
	until := e.since.Add(t.Period)
	if deadline := e.held.Add(HoldFactor * t.Period); until.After(deadline) {
		until = deadline
	}
	left := until.Sub(now)
	if left <= 0 {
		t.episode(asset, time.Time{}) // written now: the next change starts afresh
		return 0, false
	}
	return left, true
}

// episode records when asset's current wait began (zero: it ended).
func (t *Tracker) episode(asset string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.seen[asset]; ok {
		e.held = at
		t.seen[asset] = e
	}
}
