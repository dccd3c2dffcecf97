package controller

import (
	"sync"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// PoolBusyBound bounds how long a reboot-causing write waits for a pool
// that MCO is rolling or that is degraded: after it, the write goes (a
// degraded pool may be waiting for exactly this correction).
const PoolBusyBound = time.Hour

// poolBusyRecheck is how often a held write looks at its pool again (pool
// status changes do not wake a reconcile).
const poolBusyRecheck = 30 * time.Second

// poolWaits holds reboot-causing writes while their pool is busy, so
// rollouts never stack, each wait bounded by PoolBusyBound.
type poolWaits struct {
	mu    sync.Mutex
	since map[string]time.Time // asset -> first held
	now   func() time.Time
}

func newPoolWaits() *poolWaits {
	return &poolWaits{since: map[string]time.Time{}, now: time.Now}
}

// hold says whether d's write (a creation, correction or deletion that is
// due) must wait for its pool, judged on this reconcile's facts rc, with
// the result to record instead.
func (p *poolWaits) hold(rc *rendercontext.RenderContext, d *engine.Decision, res engine.Result) (engine.Result, bool) {
	dis := engine.DisruptionOf(d)
	if !dis.Reboot || dis.Pool == "" {
		return engine.Result{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	why := engine.PoolBusy(rc, dis.Pool)
	if why == "" {
		delete(p.since, d.Asset.Name)
		return engine.Result{}, false
	}
	first, ok := p.since[d.Asset.Name]
	if !ok {
		first = p.now()
		p.since[d.Asset.Name] = first
	}
	left := first.Add(PoolBusyBound).Sub(p.now())
	if left <= 0 {
		delete(p.since, d.Asset.Name) // waited long enough: the write goes
		return engine.Result{}, false
	}
	res.Outcome, res.RetryAfter = engine.Settling, min(left, poolBusyRecheck)
	res.Reason = why + "; this write reboots the pool too, so it waits until the pool is at rest (at most " + PoolBusyBound.String() + ")"
	return res, true
}
