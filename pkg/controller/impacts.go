package controller

import (
	"context"
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
	at   time.Time
	text string
}

func newImpacts(r client.Reader, now func() time.Time) *impacts {
	return &impacts{reader: r, now: now, seen: map[string]seenImpact{}}
}

// needs reports whether res's write reboots a pool and is sent or waits:
// only then is its impact said.
func needsImpact(d *engine.Decision, res engine.Result) bool {
	switch res.Outcome {
	case engine.Applied, engine.Deleted, engine.Staged, engine.Settling:
		dis := engine.DisruptionOf(d)
		return dis.Reboot && dis.Pool != ""
	}
	return false
}

// count says what a rollout of pool does to its VMs: listed now when
// fresh, else a count at most impactTTL old.
func (m *impacts) count(ctx context.Context, rc *rendercontext.RenderContext, pool string, fresh bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.seen[pool]; ok && !fresh && m.now().Sub(s.at) < impactTTL {
		return s.text
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	text := impact.Of(lctx, m.reader, rc, []string{pool})[0].String()
	m.seen[pool] = seenImpact{at: m.now(), text: text}
	return text
}

// annotate sets the VM impact of each write that reboots a pool, sent or
// waiting: one count per pool, listed afresh when any of that pool's
// writes was sent or starts waiting.
func (m *impacts) annotate(ctx context.Context, ws []rollingWrite) {
	fresh := map[string]bool{}
	for _, w := range ws {
		pool := engine.DisruptionOf(w.d).Pool
		fresh[pool] = fresh[pool] || w.fresh || w.res.Outcome == engine.Applied || w.res.Outcome == engine.Deleted
	}
	counted := map[string]string{}
	for i := range ws {
		pool := engine.DisruptionOf(ws[i].d).Pool
		text, ok := counted[pool]
		if !ok {
			text = m.count(ctx, ws[i].rc, pool, fresh[pool])
			counted[pool] = text
		}
		ws[i].res.Impact = text
	}
}
