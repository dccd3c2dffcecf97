// Package gate decides whether one write may go now. Every write and
// every delete the controller sends is described once (Write) and judged
// here, by the same checks in the same order, whatever path it comes
// from: a creation, a correction, a re-creation, a shared merge, an
// opt-in asset switched off, a tombstone, a superseded object, and the
// attempt to read and render an asset at all (Attempt). The gate owns
// every clock those checks need (backoff, settle, pool waits,
// anti-thrashing) and returns plain data: go, or the outcome, why, and
// when to look again.
//
// The order (Order; the first check that holds decides):
//  1. deletion intent: a deletion goes only on a person's or a release's
//     intent, of an object provably the autopilot's (engine.Guard);
//  2. report-only: nothing is written or deleted, ever (Drifted);
//  3. beside the shipped autopilot: while the autopilot OpenShift
//     Virtualization ships acts, or whether it does cannot be told,
//     nothing is written or deleted (Paused; pkg/shipped);
//  4. input: an exclusion entry not understood holds what reboots a pool
//     or changes remediation (Invalid);
//  5. dependency: a write waits for the write it goes with
//     (MissingDependency);
//  6. backoff: after a failure, nothing of the asset (or tombstone) is
//     read or sent until its backoff expires (Failed);
//  7. settle: a write that changed facts ask for, and that changes the
//     object, waits for them to hold (Settling);
//  8. fact budget: a fact-driven write that reboots a pool goes at most
//     FactRolloutBudget times per FactRolloutWindow per object, counted
//     on the object itself (Staged);
//  9. disruption window: a write that reboots a pool goes only while the
//     HCO's window is open, or when it has none (Staged);
//  10. busy pools: a write that reboots a pool waits while any pool it
//     reaches is rolling or not yet judged by MCO, or the pools cannot be
//     read (until at rest), or is degraded or has a node not ready (at
//     most PoolBusyBound) (Settling);
//  11. write budget: a correction, merge or re-creation takes a token
//     from the object's bucket (Throttled).
//
// What a write reaches is computed by one function for every path
// (engine.DisruptionOf for a decision's object, engine.RemovalDisruption
// for a deletion, both over the pools' selectors). Information that is
// missing holds: pools that cannot be read, a window not understood, a
// deletion without the object it deletes.
package gate

import (
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// Op is what a write does to its object.
type Op string

// The writes the controller sends.
const (
	// Create makes an object that does not exist (and, to this process's
	// knowledge, never did: not a correction).
	Create Op = "create"
	// Recreate makes again an object this process created or saw, that
	// someone deleted: a correction (a deletion loop is a fight).
	Recreate Op = "re-create"
	// Correct applies the desired state over a live object that drifted.
	Correct Op = "correct"
	// Merge corrects a shared object the autopilot merges a setting into.
	Merge Op = "merge"
	// SwitchOff deletes what an opt-in asset created, a person having
	// turned it off.
	SwitchOff Op = "switch-off delete"
	// Tombstone deletes an object an earlier release created and this one
	// no longer ships.
	Tombstone Op = "tombstone delete"
	// Supersede deletes an object whose settings another asset's object
	// carries now (catalog Replaces), when that object is already in
	// place; otherwise the deletion goes with its write, judged as one.
	Supersede Op = "superseded delete"
	// Attempt reads and renders an asset, or sends something no other
	// check concerns (a tombstone's read, the fleet status): only its
	// backoff can hold it (Gate.Attempt).
	Attempt Op = "attempt"
	// Report writes the autopilot's own report (the fleet status), no
	// managed object: only its write budget concerns it (Gate.Budget).
	Report Op = "report"
)

// Deletes reports whether op removes its object.
func (op Op) Deletes() bool { return op == SwitchOff || op == Tombstone || op == Supersede }

// Budgeted reports whether op spends the object's write budget: a write
// that undoes someone else's change (a correction, a merge, a re-creation
// of what someone deleted).
func (op Op) Budgeted() bool { return op == Correct || op == Merge || op == Recreate || op == Report }

// Write is one write, as the gate judges it.
type Write struct {
	Op Op
	// ID identifies the object (engine.Identity): its bucket and its pool
	// wait.
	ID string
	// Asset names the catalog asset, "" for a tombstone: its settle clock.
	Asset string
	// Disruption is what the write does to nodes: the pools it rolls and
	// whether it reboots them (a correction of metadata alone reaches no
	// node unless it moves the object between pools).
	Disruption engine.Disruption
	// ReportOnly: the object is compared, never written or deleted.
	ReportOnly bool
	// Settle, for a write that a change of derived facts can ask for (it
	// reboots a pool or changes remediation): the prints now and on the
	// live object. nil: the write never waits for facts (a deletion is a
	// person's or a release's intent).
	Settle *Settle
	// Sensitive: the object reboots a pool or changes remediation (an
	// exclusion entry not understood holds it, whatever the write).
	Sensitive bool
	// Waits, when set, is why the write waits for another (the object
	// that carries its settings): the planner's dependency.
	Waits string
	// Live is the object a deletion removes: the deletion intent check
	// judges it (nil holds).
	Live *unstructured.Unstructured
	// Retry names the backoff the write is paced by after a failure: its
	// asset's, or its tombstone's ("" none).
	Retry string
	// Drift and Opponents describe a correction, for messages.
	Drift     []string
	Opponents []string
}

// Settle is what the settle rule reads of one write.
type Settle struct {
	Now  settle.Print
	Live settle.Print // stamped on the live object; zero when none
	// Exists: the object exists (its stamp, even empty, decides).
	Exists bool
	// Rollouts are the live object's record of fact-driven rewrites
	// (annotations.FactRollouts); RolloutsErr when it is not understood.
	Rollouts    []time.Time
	RolloutsErr error
}

// Verdict is the gate's answer: Go, or the outcome that stands instead,
// why, and when to look again.
type Verdict struct {
	Go         bool
	Outcome    engine.Outcome
	Reason     string
	RetryAfter time.Duration
	// Took: letting the write go took a token from the object's budget
	// (Unspent gives it back if the write changed nothing).
	Took bool
	// FactRollouts, when set, is the record the write must carry
	// (annotations.FactRollouts): it is a fact-driven rollout, counted.
	FactRollouts string
	// Annotation names the HCO annotation not understood that holds the
	// write (Invalid).
	Annotation string
	// Check names the check that held the write (Order).
	Check string
}

// Config sizes the gate's clocks.
type Config struct {
	Throttle throttle.Config
	// SettlePeriod: how long a fact must hold (negative: no wait).
	SettlePeriod time.Duration
	// Resync bounds how long a staged write is not looked at again.
	Resync time.Duration
	// Now is the clock of windows, pool waits, settling and backoff; nil
	// is time.Now.
	Now func() time.Time
	// Catalog tells which kinds an exclusion entry may name (nil: none is
	// known, so any entry holds what reboots a pool).
	Catalog *catalog.Catalog
}

// Gate judges writes. Safe for concurrent use (the debug endpoints read
// its budgets while a reconcile runs).
type Gate struct {
	cfg      Config
	throttle *throttle.Throttle
	settle   *settle.Tracker
	pools    *poolWaits
	retries  *retries
}

// New returns a gate with fresh clocks.
func New(cfg Config) *Gate {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 10 * time.Minute
	}
	g := &Gate{cfg: cfg, throttle: throttle.New(cfg.Throttle), settle: settle.New(cfg.SettlePeriod, cfg.Now),
		pools: newPoolWaits(), retries: newRetries()}
	g.pools.now = cfg.Now
	g.retries.now = cfg.Now
	return g
}

// Judge says whether w may be sent now, judged on this pass's view of the
// cluster rc (for a deletion and for a write paired with one, the context
// with the HCO as just re-read). A Go verdict of a correction or
// re-creation has taken its token: a write the API server then refuses
// gives it back (Refused).
func (g *Gate) Judge(rc *rendercontext.RenderContext, w Write) Verdict {
	return g.judge(rc, w, true)
}

// Peek is Judge without taking a token: the same checks in the same order,
// for a correction about to be confirmed by a dry run. When the write
// budget is what holds it (Check WriteBudget: no other check does),
// nothing is sent, not even the dry run; any other hold is reported only
// once the dry run confirmed there is something to hold. The Judge that
// follows decides.
func (g *Gate) Peek(rc *rendercontext.RenderContext, w Write) Verdict {
	return g.judge(rc, w, false)
}

// Order names the gate's checks in the order Judge asks them: the first
// that holds decides the outcome. docs/reliability.md documents it; the
// gate's tests pin every pair.
//
// Deletion intent comes before report-only: a deletion the guard refuses
// is no change a report-only autopilot would make, so it is reported as
// kept, not as "would delete".
var Order = []string{Intent, ReportOnly, Beside, "input", "dependency", Backoff, "settle", "fact budget", Window, Pools, WriteBudget}

// The checks callers tell apart by name.
const (
	// Intent: a deletion the guard refuses (not provably the
	// autopilot's, not intended): the object is kept (Verdict.Kept).
	Intent = "deletion intent"
	// ReportOnly: the autopilot only reports; nothing is sent until a
	// person changes the activation.
	ReportOnly = "report-only"
	// Beside: the autopilot OpenShift Virtualization ships acts, or may.
	Beside = "beside the shipped autopilot"
	// Backoff: the asset's (or tombstone's) last attempt failed and its
	// backoff has not expired.
	Backoff = "backoff"
	// Window: a write that reboots a pool waits for the disruption window
	// (the console shows when it opens).
	Window = "window"
	// Pools: a write that reboots a pool waits while a pool it reaches
	// is busy.
	Pools = "pools"
	// WriteBudget is the last check: a correction, merge or re-creation
	// takes a token from its object's bucket.
	WriteBudget = "write budget"
)

// judgement is one pass of the checks over one write.
type judgement struct {
	g    *Gate
	rc   *rendercontext.RenderContext
	w    Write
	now  time.Time
	take bool
	// record is the fact budget's record the write carries if it goes.
	record string
}

// check is one rule of the gate: held, and the verdict that stands instead.
type check func(j *judgement) (Verdict, bool)

// checks are the rules, by name (Order gives their order).
var checks = map[string]check{
	Intent:        (*judgement).intent,
	ReportOnly:    (*judgement).reportOnly,
	Beside:        (*judgement).beside,
	"input":       (*judgement).input,
	"dependency":  (*judgement).dependency,
	Backoff:       (*judgement).backoff,
	"settle":      (*judgement).settle,
	"fact budget": (*judgement).factBudget,
	Window:        (*judgement).window,
	Pools:         (*judgement).pools,
	WriteBudget:   (*judgement).budget,
}

func (g *Gate) judge(rc *rendercontext.RenderContext, w Write, take bool) Verdict {
	j := &judgement{g: g, rc: rc, w: w, now: g.cfg.Now(), take: take}
	for _, name := range Order {
		if v, held := checks[name](j); held {
			v.Check = name
			return v
		}
	}
	v := Verdict{Go: true, FactRollouts: j.record}
	v.Took = take && w.Op.Budgeted()
	return v
}

// intent: a deletion goes only on intent, of an object provably the
// autopilot's, judged on this view of the HCO (engine.Guard: its
// activation, exclusions and lifecycle; the object's label, field manager,
// mode, adoption, sharing, and for an obsolete object a person's
// customization). A deletion without its object, or without a view of the
// HCO, holds. The object is kept (Retained; Verdict.Kept).
func (j *judgement) intent() (Verdict, bool) {
	if !j.w.Op.Deletes() {
		return Verdict{}, false
	}
	why := "what it would delete, or the HyperConverged it would be judged on, is unknown"
	if j.w.Live != nil && j.rc != nil {
		guard := engine.GuardFor(j.rc)
		if j.w.Op != SwitchOff {
			guard = guard.ForTombstones() // a release's intent, not a person's
		}
		var ok bool
		if ok, why = guard.MayDelete(j.w.Live); ok {
			return Verdict{}, false
		}
	}
	return Verdict{Outcome: engine.Retained, Reason: why}, true
}

// backoff: after a failure, nothing of the asset (or tombstone) is read or
// sent until its backoff expires, whatever woke the reconcile (Failed).
func (j *judgement) backoff() (Verdict, bool) {
	if j.w.Retry == "" {
		return Verdict{}, false
	}
	left, held := j.g.retries.held(j.w.Retry)
	if !held {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.Failed, RetryAfter: left,
		Reason: fmt.Sprintf("its last attempt failed; tried again in %s", left.Round(time.Second))}, true
}

// reportOnly: nothing is written or deleted, ever (Drifted).
func (j *judgement) reportOnly() (Verdict, bool) {
	if !j.w.ReportOnly {
		return Verdict{}, false
	}
	return reportOnly(j.w), true
}

// beside: while the autopilot OpenShift Virtualization ships acts (or
// whether it does cannot be told), nothing is written or deleted: it
// writes the same objects under the same field manager name, so each
// apply would undo the other's (Paused; engine.Beside). Judged on this
// pass's view of the cluster, so a restart decides the same.
func (j *judgement) beside() (Verdict, bool) {
	if j.w.Op == Attempt || j.w.Op == Report {
		return Verdict{}, false // a read or render, or its own report: no managed object
	}
	v := engine.Beside(j.rc)
	if !v.Holds() {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.Paused, Reason: v.Reason, RetryAfter: j.g.cfg.Resync}, true
}

// input: an entry of the HCO's exclusion list that is not understood may
// have meant any object; until it is fixed, nothing that reboots a pool
// or changes remediation is written or deleted, on any path (Invalid).
func (j *judgement) input() (Verdict, bool) {
	if !j.w.Sensitive {
		return Verdict{}, false
	}
	why := engine.ExclusionUnsure(j.g.cfg.Catalog, j.rc)
	if why == "" {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.Invalid, Annotation: annotations.DisabledResources, RetryAfter: j.g.cfg.Resync,
		Reason: why + ": it may have meant this object, which reboots a pool or changes remediation, so it is left as it is until the entry is fixed"}, true
}

// dependency: a write that goes with another (the carrier of its
// settings, the object it replaces) waits for it, so a pool never rolls
// twice for one change nor without the settings in between.
func (j *judgement) dependency() (Verdict, bool) {
	if j.w.Waits == "" {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.MissingDependency, Reason: j.w.Waits, RetryAfter: j.g.cfg.Resync}, true
}

// settle: a write that changed facts ask for, and that changes the
// object, waits for them to hold (Settling).
func (j *judgement) settle() (Verdict, bool) {
	w := j.w
	if w.Settle == nil || w.Asset == "" || w.Op.Deletes() {
		return Verdict{}, false
	}
	left, wait := j.g.settle.Wait(w.Asset, w.Settle.Now, w.Settle.Live, w.Settle.Exists)
	if !wait {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.Settling, RetryAfter: left,
		Reason: fmt.Sprintf("the hardware, topology or objects it renders from changed and change the object; this write reboots a pool or changes remediation, so it waits until the change has held for %s (at most %d periods while it keeps changing)", j.g.cfg.SettlePeriod, settle.HoldFactor)}, true
}

// factBudget: a fact-driven write that reboots a pool goes at most
// FactRolloutBudget times per FactRolloutWindow (Staged).
func (j *judgement) factBudget() (Verdict, bool) {
	record, why, retry, spent := factBudget(j.w, j.now, j.g.cfg.Resync)
	if spent {
		return Verdict{Outcome: engine.Staged, Reason: why, RetryAfter: retry}, true
	}
	j.record = record
	return Verdict{}, false
}

// window: a write that reboots a pool goes only while the HCO's window is
// open, or when it has none (Staged).
func (j *judgement) window() (Verdict, bool) {
	why, opens, staged := engine.Staging(j.rc, j.w.Disruption, j.now)
	if !staged {
		return Verdict{}, false
	}
	// Back when the window opens, and no later than the resync: a staged
	// write must not suspend it for days.
	retry := j.g.cfg.Resync
	if !opens.IsZero() {
		retry = min(max(opens.Sub(j.now), time.Second), j.g.cfg.Resync)
	}
	return Verdict{Outcome: engine.Staged, Reason: why, RetryAfter: retry}, true
}

// pools: a write that reboots a pool waits while a pool it reaches is busy
// (Settling).
func (j *judgement) pools() (Verdict, bool) {
	why, retry, held := j.g.pools.wait(j.rc, j.w.ID, j.w.Disruption)
	if !held {
		return Verdict{}, false
	}
	return Verdict{Outcome: engine.Settling, Reason: why, RetryAfter: retry}, true
}

// budget: a correction, merge or re-creation takes a token from the
// object's bucket (Throttled); a peek only looks.
func (j *judgement) budget() (Verdict, bool) {
	if !j.w.Op.Budgeted() {
		return Verdict{}, false
	}
	if !j.take {
		if wait := j.g.throttle.Wait(j.w.ID); wait > 0 {
			return j.g.throttled(j.w, wait), true
		}
		return Verdict{}, false
	}
	if ok, wait := j.g.throttle.Allow(j.w.ID); !ok {
		return j.g.throttled(j.w, wait), true
	}
	return Verdict{}, false
}

// Kept reports whether v keeps the object a deletion would remove: the
// deletion is not intended, or not provably the autopilot's to make.
func (v Verdict) Kept() bool { return !v.Go && v.Check == Intent }

// Attempt judges whether key (an asset, a tombstone, a step of the
// reconcile) may be tried now: held only by its backoff after a failure.
func (g *Gate) Attempt(key string) Verdict {
	return g.judge(nil, Write{Op: Attempt, Retry: key}, false)
}

// Held is res as the write v did not let go leaves it: v's outcome, why
// (after what, when set), when to look again, and the annotation not
// understood behind an Invalid. Every path maps a held verdict here.
func (v Verdict) Held(res engine.Result, what string) engine.Result {
	res.Outcome, res.RetryAfter, res.Annotation, res.HeldBy = v.Outcome, v.RetryAfter, v.Annotation, v.Check
	res.Reason = v.Reason
	if what != "" {
		res.Reason = what + ": " + v.Reason
	}
	return res
}

// Unspent gives back the token v (the verdict that let w go) took, for a
// write that changed nothing: refused or failed at the API server,
// answered without a change, or waiting for its namespace. A write that
// landed is never given back.
func (g *Gate) Unspent(w Write, v Verdict) {
	if v.Took {
		g.throttle.Refund(w.ID)
	}
}

// Observe records an asset's current settle print, whether or not it is
// written (a fact turning an asset on is a change too).
func (g *Gate) Observe(asset string, p settle.Print) { g.settle.Observe(asset, p) }

// Refused reports a write (or its dry run) the API server refused (err:
// permissions, admission, validation), v being the verdict that let it go
// (zero for a dry run): it changed nothing, so it spends no budget and
// names no opponent. Its outcome is the refusal; the caller retries it on
// the asset's backoff (Failed), as a permanent error.
func (g *Gate) Refused(w Write, v Verdict, err error) Verdict {
	g.Unspent(w, v)
	return Verdict{Outcome: engine.Refused, Reason: fmt.Sprintf("the API server refused the %s: %v", w.Op, err)}
}

// Unanswered is what a request that did not succeed comes to, on every
// path (a write, its dry run, a deletion): err wrapped to name what was
// sent and its object; a refusal on its merits (IsRefusal: permissions,
// admission, validation) is Refused, anything else (a webhook not
// callable, a conflict, an overloaded server) Failed. Neither changed
// anything: the token v took (zero for a dry run) is given back, and no
// opponent is named. The caller retries it on the asset's backoff.
func (g *Gate) Unanswered(res engine.Result, w Write, v Verdict, what string, obj *unstructured.Unstructured, err error) engine.Result {
	err = fmt.Errorf("%s of %s: %w", what, engine.ObjectKey(obj), err)
	res.Err, res.Opponents = err, nil
	if IsRefusal(err) {
		r := g.Refused(w, v, err)
		res.Outcome, res.Reason = r.Outcome, r.Reason
		return res
	}
	g.Unspent(w, v)
	res.Outcome, res.Reason = engine.Failed, err.Error()
	return res
}

// IsRefusal reports whether err is the API server refusing a write on its
// merits (not allowed, not valid, denied by admission), which trying again
// at once will not change; a timeout, a conflict or an unavailable server
// is not.
func IsRefusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsUnauthorized(err)
}

// Budget judges a correction of id that no decision describes (the fleet
// status, a report), taking a token from its write budget when it goes:
// false and how long until one is back when it is spent.
func (g *Gate) Budget(id string) (bool, time.Duration) {
	// Judged like a correction that reaches no node: only the write
	// budget concerns it.
	v := g.judge(nil, Write{Op: Report, ID: id}, true)
	return v.Go, v.RetryAfter
}

// Refund gives back the token Budget took for id's write, which changed
// nothing (refused or failed at the API server).
func (g *Gate) Refund(id string) { g.throttle.Refund(id) }

// Forget drops an object's budget once the autopilot removed it itself:
// creating it again later is not a correction.
func (g *Gate) Forget(id string) { g.throttle.Forget(id) }

// Failed counts a failure of key (an asset, or a step of the reconcile)
// and returns how long until its next try.
func (g *Gate) Failed(key string) time.Duration { return g.retries.failed(key) }

// Succeeded ends key's backoff.
func (g *Gate) Succeeded(key string) { g.retries.succeeded(key) }

// Throttled counts objects whose budget is spent (a metric).
func (g *Gate) Throttled() int { return g.throttle.Throttled() }

// ThrottleState is one object's bucket (the debug view).
func (g *Gate) ThrottleState(id string) throttle.State { return g.throttle.State(id) }

func (g *Gate) throttled(w Write, wait time.Duration) Verdict {
	who := "another actor"
	if len(w.Opponents) > 0 {
		who = "field manager(s) " + strings.Join(w.Opponents, ", ")
	}
	// No remaining time in the message, only the budget's constant
	// pace: it stays the same for the whole episode, so the Thrashing
	// event is recorded once (RetryAfter says when the next write goes).
	return Verdict{Outcome: engine.Throttled, RetryAfter: wait,
		Reason: fmt.Sprintf("corrective writes to %s are paused: fields %s, changed by %s, keep changing; writing resumes by itself as the write budget refills, one write every %s",
			w.ID, strings.Join(w.Drift, ", "), who, g.throttle.Refill())}
}

// reportOnly is the verdict on a write report-only holds: Drifted, with
// what a write would do; nothing is sent.
func reportOnly(w Write) Verdict {
	v := Verdict{Outcome: engine.Drifted}
	switch {
	case w.Op.Deletes():
		v.Reason = "report-only: a write would delete the object (" + string(w.Op) + "); nothing is deleted"
	case w.Op == Create || w.Op == Recreate:
		v.Reason = "report-only: the object does not exist; a write would create it"
	default:
		v.Reason = "report-only: differs from what would be applied in " + strings.Join(w.Drift, ", ") + "; nothing is written"
	}
	return v
}

// ForDecision describes the write of d's desired object: op is Create,
// Recreate or Correct (Merge for a shared asset's correction); drift are
// the fields a correction changes.
func ForDecision(d *engine.Decision, op Op, drift, opponents []string) Write {
	if op == Correct && d.Asset != nil && d.Asset.Shared {
		op = Merge
	}
	w := Write{Op: op, ID: engine.Identity(d.Desired), Disruption: engine.DisruptionOf(d),
		ReportOnly: d.ReportOnly, Drift: drift, Opponents: opponents, Sensitive: sensitive(d.Desired), Waits: d.Waits}
	if d.Asset != nil {
		w.Asset, w.Retry = d.Asset.Name, d.Asset.Name
		w.Sensitive = w.Sensitive || engine.Settles(d.Asset, d.Desired.GetKind())
	}
	unknownMove := d.PoolsUnknown && engine.MayMovePools(d.Desired.GetKind(), drift)
	switch {
	case unknownMove && len(w.Disruption.Actions) > 0:
		// The pools unread, a move between them cannot be ruled out, and
		// a move is never lighter than a reboot.
		w.Disruption.Reboot, w.Disruption.Actions = true, nil
	case (op == Correct || op == Merge) && !engine.ReachesNodes(drift) && !d.MovesPools && !unknownMove && d.Replaces == nil:
		// Labels and annotations reboot nothing, unless they move the
		// object between pools (or, the pools unread, might), or the
		// write also deletes the object it replaces.
		w.Disruption = engine.Disruption{}
	}
	if d.FactPrint != "" {
		w.Settle = &Settle{Now: d.SettlePrint(), Exists: d.Live != nil}
		if d.Live != nil {
			w.Settle.Live = settle.ParseStamp(d.Live.GetAnnotations()[annotations.Facts])
			if v, ok := d.Live.GetAnnotations()[annotations.FactRollouts]; ok {
				w.Settle.Rollouts, w.Settle.RolloutsErr = annotations.ParseFactRollouts(v)
			}
		}
	}
	return w
}

// ForRemoval describes the deletion of live by op (SwitchOff, Tombstone;
// asset "" for a tombstone), judged on rc's pools.
func ForRemoval(rc *rendercontext.RenderContext, op Op, asset string, live *unstructured.Unstructured, reportOnly bool) Write {
	w := Write{Op: op, ID: engine.Identity(live), Asset: asset, Disruption: engine.RemovalDisruption(rc, live), ReportOnly: reportOnly,
		Live: live, Retry: asset}
	if asset == "" {
		w.Retry = TombstoneRetry(w.ID)
	}
	w.Sensitive = sensitive(live) || w.Disruption.Reboot || len(w.Disruption.Actions) > 0
	return w
}

// Riding is w, the deletion that goes with a write the gate let go (a
// superseded object deleted with its replacement's write): its
// disruption, input, settle and backoff were judged with that write, so
// only the deletion intent and report-only remain to ask.
func Riding(w Write) Write {
	w.Disruption, w.Sensitive, w.Retry, w.Waits = engine.Disruption{}, false, "", ""
	return w
}

// TombstoneRetry is the backoff key of the tombstone of the object id.
func TombstoneRetry(id string) string { return "tombstone " + id }

// sensitive: u's kind reboots a pool or changes remediation, whatever
// the asset (a tombstone has none).
func sensitive(u *unstructured.Unstructured) bool {
	return catalog.RebootKinds[u.GetKind()] || engine.RemediationKinds[u.GetKind()]
}
