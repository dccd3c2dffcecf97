package gate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// holds is how each of the gate's checks is made to hold one write, and
// how its verdict is told apart from the others' (outcome, and a word of
// its reason): written from docs/reliability.md's order, not from the
// gate's code.
var holds = map[string]struct {
	outcome engine.Outcome
	says    string
}{
	"deletion intent": {engine.Retained, "adopted"},
	"backoff":         {engine.Failed, "last attempt failed"},
	"report-only":     {engine.Drifted, "report-only"},
	gate.Beside:       {engine.Paused, "OpenShift Virtualization ships"},
	"input":           {engine.Invalid, annotations.DisabledResources},
	"dependency":      {engine.MissingDependency, "carrier"},
	"settle":          {engine.Settling, "it renders from changed"},
	"fact budget":     {engine.Staged, annotations.FactRollouts},
	"window":          {engine.Staged, "window"},
	"pools":           {engine.Settling, "MachineConfigPool"},
	"write budget":    {engine.Throttled, "write budget"},
}

// scene builds a gate and one correction of a worker MachineConfig (it
// reboots the pool, settles, spends the budget) on which exactly the
// checks in on hold; with the deletion intent check on, the switch-off
// deletion of that object, which predates the autopilot (adopted).
func scene(t *testing.T, on map[string]bool) (*gate.Gate, *rendercontext.RenderContext, gate.Write) {
	t.Helper()
	clock := monday.Add(-time.Hour)
	g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}, SettlePeriod: 5 * time.Minute,
		Resync: time.Hour, Now: func() time.Time { return clock },
		Catalog: &catalog.Catalog{Assets: []catalog.Asset{{Name: "thing", Component: "MachineConfig"}}}})
	now := settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}
	if !on["settle"] {
		g.Observe("thing", now) // the new facts have held for an hour
	}
	clock = monday

	hco := &unstructured.Unstructured{Object: map[string]any{}}
	hco.SetName(rendercontext.HCOName)
	ann := map[string]string{}
	if on["window"] {
		ann[annotations.DisruptionWindow] = "Sat 02:00-06:00 UTC"
	}
	if on["input"] {
		ann[annotations.DisabledResources] = "machineconfigs/50-kubevirt-thing"
	}
	var shippedDeploy *unstructured.Unstructured
	if on[gate.Beside] {
		// The shipped autopilot of HCO v1.18.1, opted in by the switch.
		ann[annotations.Autopilot] = "true"
		shippedDeploy = shippedAutopilot("ba94138eb74ebf3508dd1f2722773d0f1091aa683947ff1a1a5690168fed6384")
	}
	hco.SetAnnotations(ann)
	worker := ""
	if on["pools"] {
		worker = "Updating"
	}
	rc := rendercontext.New(rendercontext.Facts{HCO: hco, Observed: rendercontext.Observed{Shipped: shippedDeploy, Pools: []*unstructured.Unstructured{
		pool("master", []any{"master"}, ""), pool("worker", []any{"worker"}, worker)}}})

	obj := object(reboot)
	live := obj.DeepCopy()
	la := map[string]string{annotations.Facts: settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"}.Stamp()}
	if on["fact budget"] {
		la[annotations.FactRollouts] = annotations.FormatFactRollouts([]time.Time{monday.Add(-5 * time.Hour), monday.Add(-3 * time.Hour)})
	}
	live.SetAnnotations(la)
	d := &engine.Decision{Asset: &catalog.Asset{Name: "thing", Disruption: catalog.DisruptionReboot}, Verdict: engine.VerdictIncluded,
		Rendered: obj, Desired: obj, Live: live, Pools: rc.PoolsReached(obj), ReportOnly: on["report-only"],
		FactPrint: now.Facts, ObjectPrint: now.Object, IntentPrint: now.Intent}
	if on["dependency"] {
		d.Waits = "it replaces asset old, whose carrier's write is held" // the planner's
	}
	w := gate.ForDecision(d, gate.Correct, []string{"/spec/config"}, []string{"kubectl-edit"})
	if on[gate.Intent] {
		la[annotations.Adopted] = "true"
		live.SetAnnotations(la)
		waits := w.Waits
		w = gate.ForRemoval(rc, gate.SwitchOff, "thing", live, on["report-only"])
		w.Waits = waits
	}
	if on[gate.Backoff] {
		g.Failed(w.Retry) // its last attempt failed a moment ago
	}
	if on["write budget"] {
		// An earlier correction of the same object took the token.
		prior := gate.Write{Op: gate.Correct, ID: w.ID}
		if v := g.Judge(rendercontext.New(rendercontext.Facts{HCO: hco}), prior); !v.Go || !v.Took {
			t.Fatalf("the earlier correction: %+v", v)
		}
	}
	return g, rc, w
}

// shippedAutopilot is the Deployment the HCO's CSV installs (selector
// app=virt-platform-autopilot, container manager), with image digest.
func shippedAutopilot(digest string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "virt-platform-autopilot", "namespace": "openshift-cnv"},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "virt-platform-autopilot", "control-plane": "controller-manager"}},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
				"name": "manager", "image": "quay.io/openshift-virtualization/virt-platform-autopilot@sha256:" + digest}}}},
		},
	}}
}

// decidedBy names the check whose verdict v is.
func decidedBy(v gate.Verdict) string {
	var out []string
	for name, h := range holds {
		if v.Outcome == h.outcome && strings.Contains(v.Reason, h.says) {
			out = append(out, name)
		}
	}
	return strings.Join(out, "+")
}

// Each check alone holds the write, and is told apart from the others.
func TestEveryCheckHoldsAlone(t *testing.T) {
	if len(holds) != len(gate.Order) {
		t.Fatalf("the order has %d checks, this test knows %d", len(gate.Order), len(holds))
	}
	g, rc, w := scene(t, nil)
	if v := g.Judge(rc, w); !v.Go {
		t.Fatalf("nothing on, still held: %+v", v)
	}
	for _, name := range gate.Order {
		g, rc, w := scene(t, map[string]bool{name: true})
		for _, judge := range []func(*rendercontext.RenderContext, gate.Write) gate.Verdict{g.Peek, g.Judge} {
			v := judge(rc, w)
			if v.Go || decidedBy(v) != name {
				t.Errorf("%s alone: %s (%s: %s)", name, decidedBy(v), v.Outcome, v.Reason)
			}
		}
	}
}

// documented is the order docs/architecture.md gives.
var documented = []string{"deletion intent", "report-only", "beside the shipped autopilot", "input", "dependency", "backoff", "settle", "fact budget", "window", "pools", "write budget"}

// writesOnly are the checks that never concern a deletion (it neither
// settles nor spends a budget): they cannot hold together with the
// deletion intent check.
var writesOnly = map[string]bool{"settle": true, "fact budget": true, "write budget": true}

// The gate's table is the documented order (the pairs below judge the
// behaviour, whatever the table says).
func TestOrderIsDocumented(t *testing.T) {
	if fmt.Sprint(gate.Order) != fmt.Sprint(documented) {
		t.Fatalf("the gate's order %v is not the documented %v", gate.Order, documented)
	}
}

// For every pair of checks that both hold, the one first in the
// documented order decides, for a peek as for the judge: the budget is
// never taken (nor a Thrashing reported) while a hold stands, settle
// comes before the pools, the window before them.
func TestOrderOfEveryPair(t *testing.T) {
	for i, first := range documented {
		for _, second := range documented[i+1:] {
			if first == gate.Intent && writesOnly[second] {
				continue
			}
			g, rc, w := scene(t, map[string]bool{first: true, second: true})
			if v := g.Peek(rc, w); v.Go || decidedBy(v) != first {
				t.Errorf("peek, %s and %s hold: decided by %s (%s: %s)", first, second, decidedBy(v), v.Outcome, v.Reason)
			}
			v := g.Judge(rc, w)
			if v.Go || decidedBy(v) != first {
				t.Errorf("%s and %s hold: decided by %s (%s: %s)", first, second, decidedBy(v), v.Outcome, v.Reason)
			}
			if second == "write budget" || first == "write budget" {
				continue
			}
			// A held write took no token: its bucket is as full as before.
			if st := g.ThrottleState(w.ID); st.Tokens != 1 || st.Throttled {
				t.Errorf("%s and %s held it, yet its budget was spent: %+v", first, second, st)
			}
		}
	}
}

// An exclusion entry not understood holds every write and delete that
// reboots a pool or changes remediation, whatever path sends it (a
// tombstone as much as a correction), and nothing else: the hold is the
// gate's, so no path can miss it.
func TestExclusionNotUnderstoodHoldsEveryPath(t *testing.T) {
	cat := &catalog.Catalog{Assets: []catalog.Asset{{Name: "thing", Component: "MachineConfig"}, {Name: "cm", Component: "ConfigMap"}}}
	for entry, unsure := range map[string]bool{
		"machineconfigs/50-swap-enable": true, // a plural
		"MachineConfig:50-swap-enable":  true, // malformed
		"MachineConfig/x, broken":       true,
		"machineconfig/50-swap-enable":  false,
		"ConfigMap/ns/cm":               false,
		"":                              false,
	} {
		for _, p := range paths {
			for _, k := range kinds {
				g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 5, Refill: time.Hour}, SettlePeriod: -1,
					Resync: time.Hour, Now: func() time.Time { return monday }, Catalog: cat})
				rc := context(atRest)
				hco := rc.HCOObject()
				hco.SetAnnotations(map[string]string{annotations.DisabledResources: entry})
				rc = rc.WithHCO(hco)
				w := write(p, k, atRest, rc)
				v := g.Judge(rc, w)
				held := unsure && k != none
				name := fmt.Sprintf("%q %s/%s", entry, p, k)
				// An entry that names the object keeps it from a deletion.
				kept := entry == "ConfigMap/ns/cm" && k == none && w.Op.Deletes()
				switch {
				case kept && !v.Kept():
					t.Errorf("%s: an object its exclusion names is deleted: %+v", name, v)
				case kept:
				case held && (v.Go || v.Outcome != engine.Invalid || v.Annotation != annotations.DisabledResources || v.RetryAfter <= 0):
					t.Errorf("%s: want held Invalid naming the annotation: %+v", name, v)
				case !held && !v.Go:
					t.Errorf("%s: held (%s: %s)", name, v.Outcome, v.Reason)
				}
			}
		}
	}
}

// Beside the shipped autopilot every write and delete of a managed object
// holds, and only those: reading and rendering an asset (Attempt) and
// publishing the fleet status (Budget) go on, or nothing could be
// reported.
func TestBesideHoldsWritesNotAttempts(t *testing.T) {
	g, rc, w := scene(t, map[string]bool{gate.Beside: true})
	if v := g.Attempt(w.Retry); !v.Go {
		t.Fatalf("an attempt is held: %+v", v)
	}
	if ok, _ := g.Budget("ConfigMap/virt-platform-autopilot-system/virt-platform-autopilot-status"); !ok {
		t.Fatal("the fleet status, its own report, is held")
	}
	for _, op := range []gate.Op{gate.Create, gate.Recreate, gate.Correct, gate.Merge} {
		w.Op = op
		if v := g.Judge(rc, w); v.Go || v.Check != gate.Beside {
			t.Errorf("%s beside an acting shipped autopilot: %+v", op, v)
		}
	}
	// No view of the cluster: whether it acts cannot be told, so a write holds.
	w.Op = gate.Correct
	if v := g.Judge(nil, w); v.Go || v.Check != gate.Beside {
		t.Errorf("a write judged without a view: %+v", v)
	}
}
