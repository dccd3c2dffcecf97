package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// impactTTL is how long a pool's VM count is reused while its writes
// keep waiting: a write staged for hours is re-reported on every
// reconcile, which must not list every VMI each time. A write sent, or
// one that starts waiting, is counted afresh, once per pool per reconcile.
const (
	impactTTL = time.Minute
	// listTimeout bounds the VMI LIST: a count is a report, never a wait.
	listTimeout = 10 * time.Second
)

// impacts says what a pending rollout does to a pool's VMs (pkg/impact),
// listing VMIs from the API server only when a write that reboots a pool
// is sent or waits, at most once a minute per pool: no VMI cache, nothing
// read in steady state.
type impacts struct {
	reader client.Reader
	now    func() time.Time

	mu   sync.Mutex
	seen map[string]seenImpact
}

type seenImpact struct {
	at    time.Time
	text  string
	pools []impact.Pool
}

func newImpacts(r client.Reader, now func() time.Time) *impacts {
	return &impacts{reader: r, now: now, seen: map[string]seenImpact{}}
}

// needs reports whether res's write reboots a pool and is sent or waits:
// only then is its impact said.
func needsImpact(d *engine.Decision, res engine.Result) bool {
	switch res.Outcome {
	case engine.Applied, engine.Deleted, engine.Staged, engine.Settling:
		if res.Disruption == nil && res.Outcome != engine.Deleted && d.Live != nil && len(res.Drift) > 0 && !engine.ReachesNodes(res.Drift) && !d.MovesPools {
			return false // a correction of metadata alone rolls nothing
		}
		dis := engine.Judged(d, res) // as the gate judged it, when it did
		return dis.Reboot && len(dis.Rolled()) > 0
	}
	return false
}

// count says what a rollout of pools does to their VMs: listed now when
// fresh, else a count at most impactTTL old.
func (m *impacts) count(ctx context.Context, rc *rendercontext.RenderContext, pools []string, fresh bool) string {
	text, _ := m.counted(ctx, rc, pools, fresh)
	return text
}

// counted is count with each pool's impact as data (the console view
// shows it without names).
func (m *impacts) counted(ctx context.Context, rc *rendercontext.RenderContext, pools []string, fresh bool) (string, []impact.Pool) {
	key := strings.Join(pools, ",")
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.seen[key]; ok && !fresh && m.now().Sub(s.at) < impactTTL {
		return s.text, s.pools
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var texts []string
	of := impact.Of(lctx, m.reader, rc, pools)
	for _, p := range of {
		t := p.String()
		if len(pools) > 1 {
			t = "pool " + p.Pool + ": " + t
		}
		texts = append(texts, t)
	}
	text := strings.Join(texts, "; ")
	m.seen[key] = seenImpact{at: m.now(), text: text, pools: of}
	return text, of
}

// annotate sets the VM impact of each write that reboots a pool, sent or
// waiting: one count per pool, listed afresh when any of that pool's
// writes was sent or starts waiting.
func (m *impacts) annotate(ctx context.Context, ws []rollingWrite) {
	fresh := map[string]bool{}
	for _, w := range ws {
		key := strings.Join(engine.Judged(w.d, w.res).Rolled(), ",")
		fresh[key] = fresh[key] || w.fresh || w.res.Outcome == engine.Applied || w.res.Outcome == engine.Deleted
	}
	type both struct {
		text  string
		pools []impact.Pool
	}
	done := map[string]both{}
	for i := range ws {
		pools := engine.Judged(ws[i].d, ws[i].res).Rolled()
		key := strings.Join(pools, ",")
		c, ok := done[key]
		if !ok {
			c.text, c.pools = m.counted(ctx, ws[i].rc, pools, fresh[key])
			done[key] = c
		}
		ws[i].res.Impact, ws[i].res.ImpactPools = c.text, c.pools
	}
}
