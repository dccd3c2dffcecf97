package gate

import (
	"fmt"
	"sync"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PoolBusyBound bounds how long a reboot-causing write waits for a
// degraded pool or one with a node not ready: after it, the write goes (a
// degraded pool may be waiting for exactly this correction; a node down
// for repair is no rollout). A pool MCO is rolling, has not judged, or
// that cannot be read holds the write until it is at rest: a second
// rollout stacked on a running one reboots again the nodes it has already
// done, and an unknown state is never read as at rest. Such a wait is
// reported (Settling, naming the pool, and once it is long saying so), so
// it never stalls unseen.
const PoolBusyBound = time.Hour

// poolBusyRecheck is how often a held write looks at its pool again (pool
// status changes do not wake a reconcile).
const poolBusyRecheck = 30 * time.Second

// poolWaits holds reboot-causing writes while their pool is busy, so
// rollouts never stack (engine.PoolBusy says which waits are bounded).
type poolWaits struct {
	mu    sync.Mutex
	since map[string]episode // asset or object -> its wait
	now   func() time.Time
}

// episode is one wait: when it began, and when it was last asked about. A
// wait not asked about for a while (the write was staged, or stopped being
// due) has ended: the next one starts afresh, never inheriting an old start
// that would let it skip the wait.
type episode struct {
	first, last time.Time
	// bounded is when the wait became one that ends by itself (zero:
	// it holds until the pool is at rest): the bound counts from there,
	// never from an unbounded hold before it.
	bounded time.Time
	// released is when the bound ran out and the write was let go: asked
	// again within a recheck (a peek and the judge of one pass, the cached
	// and the fresh view of a deletion), it still goes; asked later, the
	// write did not land or another is due, and a new wait begins.
	released time.Time
}

func newPoolWaits() *poolWaits {
	return &poolWaits{since: map[string]episode{}, now: time.Now}
}

// wait says whether a write with disruption dis (of an asset, or an
// object, named by key) must wait for its pool, judged on this
// reconcile's facts rc: why, and when to look again.
func (p *poolWaits) wait(rc *rendercontext.RenderContext, key string, dis engine.Disruption) (string, time.Duration, bool) {
	if !dis.Reboot || (rc.PoolsErr == nil && len(dis.Rolled()) == 0) {
		// Nothing it reaches can be busy (with the pools unreadable,
		// what it reaches is unknown: that holds, below).
		return "", 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var why string
	bounded := false
	if rc.PoolsErr != nil {
		// Unknown is not "at rest".
		why = "the MachineConfigPools could not be read (" + rc.PoolsErr.Error() + ")"
	}
	// Every pool it reaches: one that holds without a bound wins over one
	// that holds for a while, whatever their order.
	for _, pool := range dis.Rolled() {
		if why != "" && !bounded {
			break
		}
		if w, b := engine.PoolBusy(rc, pool); w != "" && (why == "" || !b) {
			why, bounded = w, b
		}
	}
	if why == "" {
		delete(p.since, key)
		return "", 0, false
	}
	now := p.now()
	e, ok := p.since[key]
	if !ok || now.Sub(e.last) > 2*poolBusyRecheck {
		e.first, e.bounded = now, time.Time{}
	}
	e.last = now
	switch {
	case !bounded:
		e.bounded = time.Time{}
	case e.bounded.IsZero():
		e.bounded = now
	}
	p.since[key] = e
	if !bounded {
		waited := now.Sub(e.first).Truncate(time.Minute)
		msg := why + "; this write reboots that pool too, so it waits until the pool is at rest"
		if waited >= PoolBusyBound {
			// Said once the wait is long, so the reason (and its Event)
			// changes once, not at every recheck.
			msg += fmt.Sprintf(" (waiting for over %s: check the pool with 'oc get machineconfigpool')", PoolBusyBound)
		}
		return msg, poolBusyRecheck, true
	}
	left := e.bounded.Add(PoolBusyBound).Sub(now)
	if left <= 0 && (e.released.IsZero() || now.Sub(e.released) <= poolBusyRecheck) {
		// Waited long enough: the write goes (the same answer for every
		// question of this pass).
		if e.released.IsZero() {
			e.released = now
		}
		p.since[key] = e
		return "", 0, false
	}
	if left <= 0 {
		// Let go a while ago and asked again: a new bounded wait.
		e = episode{first: now, last: now, bounded: now}
		p.since[key] = e
		left = PoolBusyBound
	}
	return why + "; this write reboots that pool too, so it waits until the pool is at rest (at most " + PoolBusyBound.String() + ")", min(left, poolBusyRecheck), true
}
