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

// wait says whether a write with disruption dis (of an asset, or an
// object, named by key) must wait for its pool, judged on this
// reconcile's facts rc: why, and when to look again.
func (p *poolWaits) wait(rc *rendercontext.RenderContext, key string, dis engine.Disruption) (string, time.Duration, bool) {
	if !dis.Reboot || dis.Pool == "" {
		return "", 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	why := engine.PoolBusy(rc, dis.Pool)
	if why == "" {
		delete(p.since, key)
		return "", 0, false
	}
	first, ok := p.since[key]
	if !ok {
		first = p.now()
		p.since[key] = first
	}
	left := first.Add(PoolBusyBound).Sub(p.now())
	if left <= 0 {
		delete(p.since, key) // waited long enough: the write goes
		return "", 0, false
	}
	return why + "; this write reboots the pool too, so it waits until the pool is at rest (at most " + PoolBusyBound.String() + ")", min(left, poolBusyRecheck), true
}
