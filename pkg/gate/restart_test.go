package gate_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// event is one change of a generated history: the facts, a person's
// intent, or both, changing the object the asset renders or not.
type event struct{ facts, intent, object bool }

var events = []event{
	{facts: true}, {facts: true, object: true},
	{intent: true}, {intent: true, object: true},
	{facts: true, intent: true, object: true},
	{},
}

// step is what came of one event: whether the object was rewritten (its
// spec: a pool rollout), and whether that rewrite was charged to the fact
// budget.
type step struct{ rolled, charged bool }

// replay runs a history against one object and returns what each event
// led to once the clocks had their time. restartAt (>= 0) replaces the
// gate by a new one before that event: a restart, or a new leader, which
// remembers nothing. The object's stamp follows the documented rule
// (docs/reliability.md): written with each write as facts/object/intent,
// kept while neither the object nor the intent changed.
func replay(t *testing.T, history []event, restartAt int) []step {
	t.Helper()
	clock := monday
	newGate := func() *gate.Gate {
		return gate.New(gate.Config{Throttle: throttle.Config{Burst: 100, Refill: time.Minute}, SettlePeriod: 5 * time.Minute,
			Resync: time.Hour, Now: func() time.Time { return clock }})
	}
	g := newGate()
	rc := context(atRest)
	n := 0
	next := func() string { n++; return fmt.Sprint(n) }
	now := settle.Print{Facts: settle.Scheme + "f0", Object: "o0", Intent: "i0"}
	live := now // the stamp on the live object
	spec := now.Object
	record := ""
	var out []step
	for i, e := range history {
		if i == restartAt {
			g = newGate()
		}
		if e.facts {
			now.Facts = settle.Scheme + "f" + next()
		}
		if e.intent {
			now.Intent = "i" + next()
		}
		if e.object {
			now.Object = "o" + next()
		}
		if i != restartAt {
			// The reconcile the change woke (a node event, an HCO edit).
			g.Observe("thing", now)
		}
		clock = clock.Add(10 * time.Minute)
		var s step
		for try := 0; try < 3; try++ {
			desired := now
			if live.Object == now.Object && live.Intent == now.Intent {
				desired = live // nothing to write for the stamp
			}
			if desired == live && spec == now.Object {
				break // in sync
			}
			obj := object(reboot)
			l := obj.DeepCopy()
			ann := map[string]string{annotations.Facts: live.Stamp()}
			if record != "" {
				ann[annotations.FactRollouts] = record
			}
			l.SetAnnotations(ann)
			d := &engine.Decision{Asset: &catalog.Asset{Name: "thing", Disruption: catalog.DisruptionReboot}, Verdict: engine.VerdictIncluded,
				Rendered: obj, Desired: obj, Live: l, Pools: rc.PoolsReached(obj), FactPrint: now.Facts, ObjectPrint: now.Object, IntentPrint: now.Intent}
			drift := []string{"/metadata/annotations/platform.kubevirt.io~1facts"}
			if spec != now.Object {
				drift = []string{"/spec/config"}
			}
			v := g.Judge(rc, gate.ForDecision(d, gate.Correct, drift, nil))
			if !v.Go {
				if v.Outcome != engine.Settling {
					break // staged by the fact budget: for hours
				}
				clock = clock.Add(6 * time.Minute)
				continue
			}
			if v.FactRollouts != "" {
				record, s.charged = v.FactRollouts, true
			}
			s.rolled = s.rolled || spec != now.Object
			live, spec = desired, now.Object
		}
		out = append(out, s)
	}
	return out
}

// What survives a restart is on the object: a restart (or a leader
// failover) between any two steps of a generated history leads to the
// same rollouts and the same charges to the fact budget as a process that
// saw every step; only its clocks (a settle wait) start again.
func TestRestartDecidesTheSame(t *testing.T) {
	r := rand.New(rand.NewSource(36))
	personsCharged, factsCharged := 0, 0
	for h := 0; h < 300; h++ {
		history := make([]event, 6)
		for i := range history {
			history[i] = events[r.Intn(len(events))]
		}
		want := replay(t, history, -1)
		for i, s := range want {
			switch {
			case s.charged && history[i].intent:
				personsCharged++
			case s.charged:
				factsCharged++
			}
		}
		for k := range history {
			if got := replay(t, history, k); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("history %v, restarted before step %d: %v, without a restart %v", history, k, got, want)
			}
		}
	}
	if personsCharged != 0 {
		t.Fatalf("%d rewrites carrying a person's change were charged to the fact budget", personsCharged)
	}
	if factsCharged == 0 {
		t.Fatal("no history charged the fact budget: the replay exercises nothing")
	}
}
