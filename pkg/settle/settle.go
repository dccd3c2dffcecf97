// Package settle holds back a reboot-causing write that a derived fact
// (a node label, a capacity, the topology) asks for, until that fact has
// held for a settle period. A write a person asked for (an HCO edit) or a
// new autopilot version brings is not held: only a change of facts is, and
// only when it changes the object: a correction back to what the settled
// facts render goes at once, whatever else changed in the cluster.
//
// Three prints judge it (Print): the facts an asset renders from, the
// object it renders, and the intent (what a person chose) it renders
// from. All are stamped on the object at each write, so the live object's
// stamp tells, even after a restart, whether a pending write comes from
// changed facts that change the object, or from a person. An object not created
// yet has no stamp: its creation waits only when this process saw the
// asset's facts change and, with them, what it renders (or whether it is
// active at all).
package settle

import (
	"strings"
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

// Scheme prefixes the facts prints of this scheme (the facts an asset
// reads, and only those). A stamp of another scheme (an earlier release
// hashed every fact of the pool) cannot say whether the facts changed:
// this process's own observation decides then, as for an object without a
// stamp.
const Scheme = "2."

// NoFacts is the facts print of an asset that reads no derived fact: no
// write of it is ever fact-driven.
const NoFacts = Scheme + "none"

// Tracker remembers, per asset, the print it last saw and since when.
type Tracker struct {
	Period time.Duration
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]entry
}

type entry struct {
	print Print
	since time.Time
	// changed: this process saw the facts change; before is the object
	// rendered under the facts before that change ("" while inactive).
	changed bool
	before  string
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
// inactive, with no object print: a fact that turns it on is a change).
func (t *Tracker) Observe(asset string, p Print) {
	t.observe(asset, p)
}

func (t *Tracker) observe(asset string, p Print) entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.seen[asset]
	switch {
	case !ok || e.print.Facts != p.Facts:
		// First seen, the facts count as settled (an install, a new
		// leader): a reboot-causing write of a new leader still waits for
		// pools MCO is rolling (an upgrade's relabelling happens then).
		e = entry{print: p, since: t.now(), changed: ok, before: e.print.Object, held: e.held}
	default:
		e.print.Object = p.Object
	}
	t.seen[asset] = e
	return e
}

// Wait records asset's current print p and says how long a write must
// still wait: live is the print stamped on the live object (zero when it
// has none: written before stamps or by someone else), exists whether it
// exists. A write is fact-driven when the facts differ from those its
// object was written from and the object rendered now differs from the
// one written then; only such a write waits.
func (t *Tracker) Wait(asset string, p, live Print, exists bool) (time.Duration, bool) {
	e := t.observe(asset, p)
	now := t.now()
	factDriven := e.changed && e.before != p.Object
	if driven, known := FactDriven(p, live); exists && known {
		factDriven = driven // the stamp decides, whatever this process saw
	}
	if p.Facts == NoFacts {
		factDriven = false
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
		// The deadline passed: the write may go, and stays free to go
		// while another check (a window, a busy pool) holds it; the
		// episode ends when the object carries these facts (written).
		return 0, false
	}
	return left, true
}

// FactDriven says whether rewriting an object stamped live so that it
// carries p is asked for by changed facts: the facts differ from those it
// was written from, and so does the object they render, while the intent
// it renders from (the HCO as a person wrote it) is the one it was
// written from. A change of intent since (an HCO edit) makes the write a
// person's, whatever the facts did: decided from the stamp, so a restart
// decides the same. A stamp without the intent print (an earlier
// release's) is judged by its facts and object alone (Charged does not
// count it). known is false when the stamp cannot tell (none, or of
// another scheme): the caller's own observation decides, and nothing is
// charged to the fact budget.
func FactDriven(p, live Print) (driven, known bool) {
	if live.Object != "" && live.Object == p.Object {
		// It renders the object it was written as: a write restores or
		// keeps that, whatever the facts did.
		return false, true
	}
	if !strings.HasPrefix(live.Facts, Scheme) || !strings.HasPrefix(p.Facts, Scheme) {
		return false, false
	}
	if p.Facts == NoFacts {
		return false, true
	}
	if live.Intent != "" && p.Intent != "" && live.Intent != p.Intent {
		return false, true // a person's change is pending
	}
	return live.Facts != p.Facts && (live.Object == "" || live.Object != p.Object), true
}

// Charged says whether rewriting an object stamped live so that it
// carries p counts against its fact budget: FactDriven by a stamp that
// also tells the intent. A stamp without the intent print (an earlier
// release's) still holds the write for the settle period, but cannot rule
// out a person's change, so it charges nothing.
func Charged(p, live Print) bool {
	driven, known := FactDriven(p, live)
	return driven && known && live.Intent != "" && p.Intent != ""
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

// Print is what a fact-driven write is judged by: Facts hashes the derived
// facts an asset renders from, Object the object it renders from them
// (before a person's patch), Intent the inputs a person chose that it
// renders from (the HCO's spec and switches it reads; "" unknown).
type Print struct{ Facts, Object, Intent string }

// Stamp is the value stamped on a written object: "facts/object/intent".
func (p Print) Stamp() string {
	switch {
	case p.Object == "" && p.Intent == "":
		return p.Facts
	case p.Intent == "":
		return p.Facts + "/" + p.Object
	}
	return p.Facts + "/" + p.Object + "/" + p.Intent
}

// ParseStamp reads a stamp; a stamp of an earlier release carries the
// facts print alone (the object print is then unknown, and the facts
// alone decide, as they did), or no intent print (intent unknown).
func ParseStamp(s string) Print {
	f, rest, _ := strings.Cut(s, "/")
	o, i, _ := strings.Cut(rest, "/")
	return Print{Facts: f, Object: o, Intent: i}
}

// Step is how long after a node event that changed a fact the autopilot
// reads the facts again: a burst (NFD relabelling every node after a
// restart) costs one reconcile per step. A sixtieth of the period, at most
// 5 s (5 s of the default 5 minutes); none without a period. A fact seen a
// step later only holds its write a step longer.
func Step(period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	return min(period/60, 5*time.Second)
}
