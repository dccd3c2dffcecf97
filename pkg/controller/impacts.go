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
// each time.
const impactTTL = time.Minute

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

// of returns the impact of res's write on its pool, or "" when it reboots
// nothing or is neither sent nor waiting. A write sent, or one that
// starts waiting (fresh), reads the VMs now; one still waiting may reuse
// a count up to impactTTL old.
func (m *impacts) of(ctx context.Context, rc *rendercontext.RenderContext, d *engine.Decision, res engine.Result, fresh bool) string {
	switch res.Outcome {
	case engine.Applied, engine.Deleted, engine.Staged, engine.Settling:
	default:
		return ""
	}
	dis := engine.DisruptionOf(d)
	if !dis.Reboot || dis.Pool == "" {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sent := res.Outcome == engine.Applied || res.Outcome == engine.Deleted
	if s, ok := m.seen[dis.Pool]; ok && !fresh && !sent && m.now().Sub(s.at) < impactTTL {
		return s.text
	}
	text := impact.Of(ctx, m.reader, rc, []string{dis.Pool})[0].String()
	m.seen[dis.Pool] = seenImpact{at: m.now(), text: text}
	return text
}
