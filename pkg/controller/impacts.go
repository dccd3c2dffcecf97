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

// impactTTL is how long a pool's VM count is reused: a write staged for
// hours is re-reported on every reconcile, which must not list every VMI
// each time. A write sent, or one that starts waiting, takes a count no
// older than impactFresh (the writes of one reconcile share one LIST).
const (
	impactTTL   = time.Minute
	impactFresh = 10 * time.Second
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

// of returns the impact of res's write on its pool, or "" when it reboots
// nothing or is neither sent nor waiting. A write sent, or one that
// starts waiting (fresh), takes a count at most impactFresh old; one
// still waiting, at most impactTTL.
func (m *impacts) of(ctx context.Context, rc *rendercontext.RenderContext, d *engine.Decision, res engine.Result, fresh bool) string {
	if !needsImpact(d, res) {
		return ""
	}
	dis := engine.DisruptionOf(d)
	m.mu.Lock()
	defer m.mu.Unlock()
	maxAge := impactTTL
	if fresh || res.Outcome == engine.Applied || res.Outcome == engine.Deleted {
		maxAge = impactFresh
	}
	if s, ok := m.seen[dis.Pool]; ok && m.now().Sub(s.at) < maxAge {
		return s.text
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	text := impact.Of(lctx, m.reader, rc, []string{dis.Pool})[0].String()
	m.seen[dis.Pool] = seenImpact{at: m.now(), text: text}
	return text
}
