package gate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// The paths that write or delete, the states of the cluster and the gate's
// clocks, and what a write does to nodes, every combination judged by the
// gate and by an oracle written from the product's promises (README,
// docs/reliability.md), not from the gate's code.

type path string

const (
	create       path = "create"
	recreate     path = "re-create"
	correctSpec  path = "correct spec"
	correctMeta  path = "correct metadata"
	sharedMerge  path = "shared merge"
	switchOff    path = "switch-off delete"
	tombstoneDel path = "tombstone delete"
	// supersede: the replaced object deleted on its own, its replacement
	// already in place (an earlier deletion failed).
	supersede path = "superseded delete"
)

var paths = []path{create, recreate, correctSpec, correctMeta, sharedMerge, switchOff, tombstoneDel, supersede}

type kind string

const (
	reboot      kind = "reboot"       // a MachineConfig MCO drains and reboots for
	restartOnly kind = "restart-only" // a correction MCO's node disruption policy applies without a drain
	none        kind = "none"         // a ConfigMap: reaches no node
)

var kinds = []kind{reboot, restartOnly, none}

type state string

const (
	atRest              state = "at rest, no window"
	windowOpen          state = "window open"
	windowClosed        state = "window closed"
	windowInvalid       state = "window not understood"
	workerUpdating      state = "worker pool updating"
	workerDegraded      state = "worker pool degraded"
	poolsUnreadable     state = "pools unreadable"
	customPoolBusy      state = "custom pool taking worker's MachineConfigs updating"
	masterBusy          state = "another pool (master) updating"
	factChangesObject   state = "fact changed, object changes"
	factKeepsObject     state = "fact changed, object the same"
	reportOnly          state = "report-only"
	budgetSpent         state = "write budget spent"
	refusedBefore       state = "the previous write was refused"
	windowClosedPoolBad state = "window closed and pool updating"
	factRolloutsSpent   state = "fact changed an hour ago, object changes, its fact budget spent"
	workerUnreported    state = "worker pool MCO has not reported on (just created)"
	workerLagging       state = "worker pool changed since MCO judged it"
	workerRendering     state = "worker pool rendered, its nodes not yet told"
	workerPaused        state = "worker pool paused with a render pending"
	adopted             state = "the object predates the autopilot (adopted)"
	backingOff          state = "the last attempt failed, its backoff running"
)

var states = []state{atRest, windowOpen, windowClosed, windowInvalid, workerUpdating, workerDegraded, poolsUnreadable,
	customPoolBusy, masterBusy, factChangesObject, factKeepsObject, reportOnly, budgetSpent, refusedBefore, windowClosedPoolBad, factRolloutsSpent,
	workerUnreported, workerLagging, workerRendering, workerPaused, adopted, backingOff}

// oracle: what the product promises for one combination ("" is: the write
// goes now). Drifted (report-only) and Retained (a deletion not provably
// the autopilot's) are answers, not waits: a change of the HCO or the
// object wakes the reconcile, so they carry no deadline.
func oracle(p path, k kind, s state) engine.Outcome {
	deletes := p == switchOff || p == tombstoneDel || p == supersede
	if deletes && s == adopted {
		// Deleted only when provably the autopilot's: kept, whatever else.
		return engine.Retained
	}
	if s == reportOnly {
		return engine.Drifted // nothing is ever written or deleted
	}
	if s == backingOff {
		// After a failure nothing of it is sent until its backoff ends.
		return engine.Failed
	}
	// Creation and deletion always reboot a MachineConfig's pools; a
	// restart-only policy covers corrections only; metadata reaches no node.
	reachesNodes := k != none && (p == create || p == recreate || deletes || ((p == correctSpec || p == sharedMerge) && k == reboot))
	// A label change may move a MachineConfig between pools: with the
	// pools unread, that cannot be ruled out.
	if k != none && p == correctMeta && s == poolsUnreadable {
		reachesNodes = true
	}
	// Only a fact-driven write of a reboot or remediation object settles,
	// and only when the facts change the object; deletions are intent.
	if k != none && !deletes && s == factChangesObject {
		return engine.Settling
	}
	// A fact-driven rewrite that reboots the pool, once the facts held,
	// goes only while the object's fact budget lasts; creations are not
	// rewrites, metadata and restart-only corrections reboot nothing.
	if s == factRolloutsSpent && k == reboot && (p == correctSpec || p == sharedMerge) {
		return engine.Staged
	}
	if reachesNodes {
		switch s {
		case windowClosed, windowInvalid, windowClosedPoolBad:
			return engine.Staged
		case workerUpdating, workerDegraded, poolsUnreadable, customPoolBusy, workerUnreported, workerLagging, workerRendering:
			// MCO rolls it, it cannot finish, or its state is not known:
			// never stack a rollout (a paused pool rolls nothing: a write
			// joins the admin's rollout when they resume it).
			return engine.Settling
		}
	}
	if s == budgetSpent && (p == recreate || p == correctSpec || p == correctMeta || p == sharedMerge) {
		return engine.Throttled
	}
	return ""
}

var monday = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// pool is a MachineConfigPool whose status is as MCO's node controller
// writes it (pkg/controller/node/status.go calculateStatus): at rest is
// Updated True, Updating False, observedGeneration the generation, the
// status's render the spec's. cond names what differs.
func pool(name string, roles []any, cond string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigSelector": map[string]any{
		"matchExpressions": []any{map[string]any{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}},
		"configuration": map[string]any{"name": "rendered-" + name + "-1"}}}}
	u.SetGroupVersionKind(rendercontext.PoolGVK)
	u.SetName(name)
	u.SetGeneration(3)
	u.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""})
	if cond == "unreported" {
		return u
	}
	updated, updating, degraded, observed, running := "True", "False", "False", int64(3), "rendered-"+name+"-1"
	switch cond {
	case "Updating":
		updated, updating, running = "False", "True", "rendered-"+name+"-0" // a rollout
	case "Degraded":
		degraded = "True"
	case "lagging":
		observed = 2
	case "rendering":
		running = "rendered-" + name + "-0"
	case "paused":
		updated, running = "False", "rendered-"+name+"-0"
		_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"type": "Updated", "status": updated},
		map[string]any{"type": "Updating", "status": updating},
		map[string]any{"type": "Degraded", "status": degraded, "message": "node failed"},
	}, "status", "conditions")
	_ = unstructured.SetNestedField(u.Object, observed, "status", "observedGeneration")
	_ = unstructured.SetNestedField(u.Object, running, "status", "configuration", "name")
	return u
}

func context(s state) *rendercontext.RenderContext {
	hco := &unstructured.Unstructured{Object: map[string]any{}}
	hco.SetName(rendercontext.HCOName)
	switch s {
	case windowOpen:
		hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: "Mon 11:00-13:00 UTC"})
	case windowClosed, windowClosedPoolBad:
		hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"})
	case windowInvalid:
		hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: "Saturday nights"})
	}
	worker, master, virt := "", "", ""
	switch s {
	case workerUpdating, windowClosedPoolBad:
		worker = "Updating"
	case workerDegraded:
		worker = "Degraded"
	case customPoolBusy:
		virt = "Updating"
	case masterBusy:
		master = "Updating"
	case workerUnreported:
		worker = "unreported"
	case workerLagging:
		worker = "lagging"
	case workerRendering:
		worker = "rendering"
	case workerPaused:
		worker = "paused"
	}
	f := rendercontext.Facts{HCO: hco, Observed: rendercontext.Observed{Pools: []*unstructured.Unstructured{
		pool("master", []any{"master"}, master), pool("worker", []any{"worker"}, worker), pool("virt", []any{"worker", "virt"}, virt)}}}
	if s == poolsUnreadable {
		f.Pools, f.PoolsErr = nil, errors.New("machineconfigpools is forbidden")
	}
	return rendercontext.New(f)
}

func object(k kind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	if k == none {
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName("cm")
		return applied(u)
	}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfig")
	u.SetName("50-kubevirt-thing")
	u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker",
		annotations.ManagedByLabel: annotations.ManagedByValue})
	return applied(u)
}

// applied is u as the autopilot's apply leaves it: provably its own (its
// label, its field manager's Apply entry).
func applied(u *unstructured.Unstructured) *unstructured.Unstructured {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[annotations.ManagedByLabel] = annotations.ManagedByValue
	u.SetLabels(labels)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

// write builds the gate's description of one path's write as the
// controller does (gate.ForDecision for a decision's object,
// gate.ForRemoval for a deletion).
func write(p path, k kind, s state, rc *rendercontext.RenderContext) gate.Write {
	obj := object(k)
	if s == adopted {
		obj.SetAnnotations(map[string]string{annotations.Adopted: "true"})
	}
	asset := &catalog.Asset{Name: "thing", Shared: p == sharedMerge}
	if k != none {
		asset.Disruption = catalog.DisruptionReboot
	}
	if p == switchOff || p == tombstoneDel || p == supersede {
		name := asset.Name
		if p == tombstoneDel {
			name = ""
		}
		return gate.ForRemoval(rc, map[path]gate.Op{switchOff: gate.SwitchOff, tombstoneDel: gate.Tombstone, supersede: gate.Supersede}[p], name, obj, s == reportOnly)
	}
	d := &engine.Decision{Asset: asset, Verdict: engine.VerdictIncluded, Rendered: obj, Desired: obj, ReportOnly: s == reportOnly}
	if k != none {
		d.Pools, d.PoolsUnknown = rc.PoolsReached(obj), rc.PoolsErr != nil
		d.FactPrint, d.ObjectPrint, d.IntentPrint = settle.Scheme+"A", "X", "I"
		switch s {
		case factChangesObject:
			d.FactPrint, d.ObjectPrint = settle.Scheme+"B", "Y"
		case factKeepsObject:
			d.FactPrint = settle.Scheme + "B"
		case factRolloutsSpent:
			d.FactPrint, d.ObjectPrint = settle.Scheme+"B", "Y"
		}
	}
	op, drift := gate.Correct, []string{"/spec/config"}
	switch p {
	case create:
		op, drift = gate.Create, []string{"(object absent)"}
	case recreate:
		op, drift = gate.Recreate, []string{"(object absent)"}
	case correctMeta:
		drift = []string{"/metadata/labels/x"}
	}
	if op == gate.Correct {
		live := obj.DeepCopy()
		if k != none && s != adopted {
			live.SetAnnotations(map[string]string{annotations.Facts: settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"}.Stamp()})
			if s == factRolloutsSpent {
				live.SetAnnotations(map[string]string{annotations.Facts: settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"}.Stamp(),
					annotations.FactRollouts: annotations.FormatFactRollouts([]time.Time{monday.Add(-20 * time.Hour), monday.Add(-3 * time.Hour)})})
			}
		}
		d.Live = live
		if k == restartOnly {
			d.NodeActions = []nodedisruption.Action{{Type: "Restart", Unit: "kubevirt-thing.service"}}
		}
	}
	return gate.ForDecision(d, op, drift, []string{"kubectl-edit"})
}

func TestGateAgainstTheOracle(t *testing.T) {
	refusal := apierrors.NewForbidden(schema.GroupResource{Resource: "machineconfigs"}, "x", errors.New("denied"))
	cases := 0
	for _, p := range paths {
		for _, k := range kinds {
			for _, s := range states {
				name := fmt.Sprintf("%s/%s/%s", p, k, s)
				clock := monday
				g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}, SettlePeriod: 5 * time.Minute,
					Resync: time.Hour, Now: func() time.Time { return clock }})
				rc := context(s)
				w := write(p, k, s, rc)
				if w.Asset != "" && (p == create || p == recreate) {
					// This process saw the object rendered from the facts before.
					g.Observe(w.Asset, settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"})
				}
				if s == factRolloutsSpent && w.Asset != "" {
					// The new facts have held for an hour: settled.
					clock = monday.Add(-time.Hour)
					g.Observe(w.Asset, settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"})
					clock = monday
				}
				if s == backingOff {
					g.Failed(w.Retry) // as the controller records a failed attempt
				}
				if s == budgetSpent || s == refusedBefore {
					// An earlier correction of the same object took the token.
					prior := w
					prior.Op, prior.Disruption, prior.Settle, prior.ReportOnly = gate.Correct, engine.Disruption{}, nil, false
					v0 := g.Judge(context(atRest), prior)
					if !v0.Go || !v0.Took {
						t.Fatalf("%s: the earlier write: %+v", name, v0)
					}
					if s == refusedBefore {
						g.Refused(prior, v0, refusal)
					}
				}
				v := g.Judge(rc, w)
				want := oracle(p, k, s)
				cases++
				switch {
				case want == "" && !v.Go:
					t.Errorf("%s: held (%s: %s), the product promises it goes", name, v.Outcome, v.Reason)
				case want != "" && v.Go:
					t.Errorf("%s: went, the product promises %s", name, want)
				case want != "" && v.Outcome != want:
					t.Errorf("%s: %s (%s), want %s", name, v.Outcome, v.Reason, want)
				case want != "" && want != engine.Drifted && want != engine.Retained && (v.RetryAfter <= 0 || v.RetryAfter > time.Hour):
					t.Errorf("%s: every wait has a deadline within the resync: retry after %s", name, v.RetryAfter)
				case want != "" && v.Reason == "":
					t.Errorf("%s: a held write says why", name)
				}
			}
		}
	}
	if cases != len(paths)*len(kinds)*len(states) {
		t.Fatalf("%d cases", cases)
	}
}

// A refused write is reported as the refusal, spends no budget and names
// nobody: refused as often as it likes, the next correction still goes.
func TestRefusedIsNoFight(t *testing.T) {
	g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 2, Refill: time.Hour}, Now: func() time.Time { return monday }})
	rc := context(atRest)
	w := write(correctSpec, none, atRest, rc)
	for i := 0; i < 20; i++ {
		let := g.Judge(rc, w)
		if !let.Go {
			t.Fatalf("attempt %d after refusals: %+v", i, let)
		}
		v := g.Refused(w, let, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("no patch")))
		if v.Outcome != engine.Refused || v.Reason == "" {
			t.Fatalf("%+v", v)
		}
	}
	// A refused dry run took no token, so it gives none back: the
	// budget a real write spent stays spent.
	g2 := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}, Now: func() time.Time { return monday }})
	if v := g2.Judge(rc, w); !v.Go || !v.Took {
		t.Fatalf("%+v", v)
	}
	g2.Refused(w, gate.Verdict{}, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("dry run")))
	if v := g2.Judge(rc, w); v.Go {
		t.Fatal("a refused dry run gave back the token an earlier write spent")
	}
	if g.Throttled() != 0 {
		t.Fatal("refusals counted as a fight")
	}
	if !gate.IsRefusal(apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", nil)) ||
		gate.IsRefusal(apierrors.NewServiceUnavailable("etcd")) || gate.IsRefusal(apierrors.NewConflict(schema.GroupResource{}, "cm", nil)) {
		t.Fatal("refusals are the server's judgement of the write, not its availability or a race")
	}
}

// The fact budget is counted on the object: a fact-driven rewrite that
// reboots the pool adds its time to the record it must carry, old times
// fall out of the window, a record not understood holds, and a write the
// facts did not ask for (a person's edit corrected) is not counted.
func TestFactBudget(t *testing.T) {
	rc := context(atRest)
	mk := func(record string, facts settle.Print) gate.Write {
		obj := object(reboot)
		live := obj.DeepCopy()
		ann := map[string]string{annotations.Facts: settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"}.Stamp()}
		if record != "" {
			ann[annotations.FactRollouts] = record
		}
		live.SetAnnotations(ann)
		d := &engine.Decision{Asset: &catalog.Asset{Name: "thing", Disruption: catalog.DisruptionReboot}, Verdict: engine.VerdictIncluded,
			Rendered: obj, Desired: obj, Live: live, Pools: rc.PoolsReached(obj), FactPrint: facts.Facts, ObjectPrint: facts.Object, IntentPrint: facts.Intent}
		return gate.ForDecision(d, gate.Correct, []string{"/spec/config"}, nil)
	}
	at := func(ago time.Duration) string { return monday.Add(-ago).UTC().Format(time.RFC3339) }
	for _, c := range []struct {
		name, record string
		facts        settle.Print
		want         string // the record written; "held" when held
	}{
		{"first", "", settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, at(0)},
		{"one recent", at(time.Hour), settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, at(time.Hour) + "," + at(0)},
		{"two recent", at(5*time.Hour) + "," + at(time.Hour), settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, "held"},
		{"out of order", at(time.Hour) + "," + at(5*time.Hour), settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, "held"},
		{"old ones fall out", at(30*time.Hour) + "," + at(25*time.Hour), settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, at(0)},
		{"not understood", "last tuesday", settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: "I"}, "held"},
		{"a person's edit, same facts", at(5*time.Hour) + "," + at(time.Hour), settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I"}, ""},
		{"facts changed, object the same", at(5*time.Hour) + "," + at(time.Hour), settle.Print{Facts: settle.Scheme + "B", Object: "X", Intent: "I"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := monday.Add(-time.Hour)
			g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 5, Refill: time.Hour}, SettlePeriod: 5 * time.Minute,
				Resync: time.Hour, Now: func() time.Time { return clock }})
			g.Observe("thing", c.facts)
			clock = monday
			v := g.Judge(rc, mk(c.record, c.facts))
			switch {
			case c.want == "held" && (v.Go || v.Outcome != engine.Staged || !strings.Contains(v.Reason, annotations.FactRollouts) || v.RetryAfter <= 0):
				t.Fatalf("want held, naming the record: %+v", v)
			case c.want != "held" && (!v.Go || v.FactRollouts != c.want):
				t.Fatalf("want it to go carrying %q: %+v", c.want, v)
			}
		})
	}
}

// A person's change made after the facts changed (the HCO edited, so the
// object changes under new intent) is never charged to the fact budget,
// and a pure fact change is: decided from the object's stamp alone, so a
// gate that saw nothing (a restart, a new leader) decides the same as one
// that watched every step.
func TestFactBudgetSparesAPersonsChange(t *testing.T) {
	rc := context(atRest)
	obj := object(reboot)
	live := obj.DeepCopy()
	// Written under facts A and intent I1; the facts changed to B since
	// without changing the object, so the stamp still says A.
	live.SetAnnotations(map[string]string{annotations.Facts: settle.Print{Facts: settle.Scheme + "A", Object: "X", Intent: "I1"}.Stamp(),
		annotations.FactRollouts: annotations.FormatFactRollouts([]time.Time{monday.Add(-5 * time.Hour), monday.Add(-3 * time.Hour)})})
	for _, c := range []struct {
		name    string
		intent  string
		charged bool
	}{
		{"a person edited the HCO", "I2", false},
		{"the facts alone", "I1", true},
	} {
		for _, restarted := range []bool{false, true} {
			clock := monday.Add(-2 * time.Hour)
			g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 5, Refill: time.Hour}, SettlePeriod: 5 * time.Minute,
				Resync: time.Hour, Now: func() time.Time { return clock }})
			if !restarted {
				// This process watched: the facts changed (B, object X),
				// then the object became Y.
				g.Observe("thing", settle.Print{Facts: settle.Scheme + "B", Object: "X", Intent: "I1"})
				clock = monday.Add(-time.Hour)
				g.Observe("thing", settle.Print{Facts: settle.Scheme + "B", Object: "Y", Intent: c.intent})
			}
			clock = monday
			d := &engine.Decision{Asset: &catalog.Asset{Name: "thing", Disruption: catalog.DisruptionReboot}, Verdict: engine.VerdictIncluded,
				Rendered: obj, Desired: obj, Live: live, Pools: rc.PoolsReached(obj), FactPrint: settle.Scheme + "B", ObjectPrint: "Y", IntentPrint: c.intent}
			v := g.Judge(rc, gate.ForDecision(d, gate.Correct, []string{"/spec/config"}, nil))
			switch {
			case !c.charged && (!v.Go || v.FactRollouts != ""):
				t.Errorf("%s (restarted %v): a person's change was held or charged: %+v", c.name, restarted, v)
			case c.charged && (v.Go || v.Outcome == ""):
				t.Errorf("%s (restarted %v): a fact-driven rewrite past its budget went: %+v", c.name, restarted, v)
			}
		}
	}
}
