package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

type countingRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (c *countingRecorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...interface{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := regarding.(*unstructured.Unstructured)
	c.reasons = append(c.reasons, reason+"@"+u.GetKind()+":"+fmt.Sprintf(note, args...))
}

func (c *countingRecorder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reasons)
}

func obj(kind, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

// Events go to the object concerned and to the HCO, once per distinct
// problem: a reconcile that changes nothing records nothing.
func TestEventsAreDeduplicated(t *testing.T) {
	rec := &countingRecorder{}
	r := New(rec)
	hco := obj("HyperConverged", "kubevirt-hyperconverged", "hco-uid")
	mc := obj("MachineConfig", "psi", "mc-uid")
	asset := &catalog.Asset{Name: "psi-enable"}
	invalid := engine.Decision{Asset: asset, Verdict: engine.VerdictInvalid, Annotation: annotations.Patch, Reason: "bad", Live: mc}

	r.Asset(context.Background(), hco, &invalid, engine.Result{Outcome: engine.Invalid, Reason: "bad"})
	if rec.count() != 2 {
		t.Fatalf("an invalid patch is reported on the object and on the HCO: %v", rec.reasons)
	}
	r.Asset(context.Background(), hco, &invalid, engine.Result{Outcome: engine.Invalid, Reason: "bad"})
	if rec.count() != 2 {
		t.Fatalf("the same problem again records nothing: %v", rec.reasons)
	}
	unchanged := engine.Decision{Asset: asset, Verdict: engine.VerdictIncluded, Live: mc}
	r.Asset(context.Background(), hco, &unchanged, engine.Result{Outcome: engine.Unchanged})
	r.Asset(context.Background(), hco, &unchanged, engine.Result{Outcome: engine.Unchanged})
	if rec.count() != 2 {
		t.Fatalf("an unchanged object records nothing: %v", rec.reasons)
	}
	r.Asset(context.Background(), hco, &invalid, engine.Result{Outcome: engine.Invalid, Reason: "bad"})
	if rec.count() != 4 {
		t.Fatalf("a problem that comes back is reported again: %v", rec.reasons)
	}
	r.Asset(context.Background(), hco, &unchanged, engine.Result{Outcome: engine.Applied, Reason: "corrected /spec/x"})
	if rec.count() != 6 {
		t.Fatalf("every corrective write is reported: %v", rec.reasons)
	}
}

// relatedRecorder keeps the related object of each event on the HCO.
type relatedRecorder struct{ related []string }

func (c *relatedRecorder) Eventf(regarding, related runtime.Object, _, _, _, _ string, _ ...interface{}) {
	if regarding.(*unstructured.Unstructured).GetKind() != "HyperConverged" {
		return
	}
	name := "<nil>"
	if related != nil {
		name = related.(*unstructured.Unstructured).GetName()
	}
	c.related = append(c.related, name)
}

// The events API folds events with the same (regarding, related, reason,
// action) into one series: an HCO event names its subject in related, even
// one not created yet (no UID), so two creations stay two events.
func TestHCOEventsCarryTheirSubject(t *testing.T) {
	rec := &relatedRecorder{}
	r := New(rec)
	hco := obj("HyperConverged", "kubevirt-hyperconverged", "hco-uid")
	for _, name := range []string{"swap", "psi"} {
		d := engine.Decision{Asset: &catalog.Asset{Name: name}, Verdict: engine.VerdictIncluded, Rendered: obj("MachineConfig", name, "")}
		r.Asset(context.Background(), hco, &d, engine.Result{Outcome: engine.Applied, Reason: "created"})
	}
	if fmt.Sprint(rec.related) != "[swap psi]" {
		t.Fatalf("related objects of the HCO's Created events: %v, want [swap psi]", rec.related)
	}
}

// An HCO-input warning is one Event per episode, even when every reconcile
// also records the golden config's outcome on the HCO object itself (the
// quiet outcome clears the HCO subject's dedup state, never the inputs').
func TestHCOInputWarningOncePerEpisode(t *testing.T) {
	rec := &countingRecorder{}
	r := New(rec)
	hco := obj("HyperConverged", "kubevirt-hyperconverged", "hco-uid")
	golden := engine.Decision{Asset: &catalog.Asset{Name: "hco-golden-config"}, Verdict: engine.VerdictIncluded, Live: hco}
	notices := []engine.Notice{
		{Annotation: "spec.featureGates", Reason: engine.Malformed, Event: "FeatureGatesUnreadable", Message: "spec.featureGates is not a list"},
		{Annotation: "platform.kubevirt.io/enable-x", Reason: engine.Malformed, Event: "InvalidSwitch", Message: "not understood"},
	}
	for range 3 {
		r.Asset(context.Background(), hco, &golden, engine.Result{Outcome: engine.Unchanged})
		r.Notices(context.Background(), hco, notices)
		r.Activation(context.Background(), hco, engine.Activation{Paused: true, Value: "false"})
	}
	if rec.count() != 3 {
		t.Fatalf("one event per standing warning (2 notices, paused) across reconciles: %v", rec.reasons)
	}
	r.Notices(context.Background(), hco, nil)
	r.Notices(context.Background(), hco, notices[:1])
	if rec.count() != 4 {
		t.Fatalf("a problem that comes back is reported again: %v", rec.reasons)
	}
}

// Each annotation that can hold an asset has its own Event reason.
func TestInvalidEventNamesTheAnnotation(t *testing.T) {
	for ann, want := range map[string]string{
		annotations.Patch: "InvalidPatch", annotations.IgnoreFields: "InvalidIgnoreFields", annotations.Mode: "InvalidMode",
		annotations.DisabledResources: "InvalidDisabledResources", "platform.kubevirt.io/enable-logging": "InvalidSwitch",
	} {
		if got := invalidEvent(ann); got != want {
			t.Errorf("invalidEvent(%s) = %s, want %s", ann, got, want)
		}
	}
}

// Each asset's warnings are one Event per episode, whatever the other
// assets do and whether it names an object this time (one that fails
// before it renders has none): never the HCO's episode (whose golden
// config's quiet outcome would end it every reconcile), nor another
// object-less asset's (they would take turns), nor its object's (a quiet
// outcome with the object must end the episode of a failure without it).
// Checked over generated reconciles against a model of episodes per asset
// and reason.
func TestWarningEpisodesArePerAsset(t *testing.T) {
	r0 := rand.New(rand.NewPCG(29, 3))
	for run := 0; run < 200; run++ {
		rec := &countingRecorder{}
		r := New(rec)
		hco := obj("HyperConverged", "kubevirt-hyperconverged", "hco-uid")
		type asset struct {
			name    string
			subject *unstructured.Unstructured
		}
		assets := []asset{{"golden", hco}, {"sbr", nil}, {"loki", nil}, {"psi", obj("MachineConfig", "psi", "mc-uid")}}
		model := map[string]string{} // asset|reason -> last message of the episode
		for step := 0; step < 40; step++ {
			for _, a := range assets {
				live := a.subject
				if r0.IntN(4) == 0 {
					live = nil // failed before it rendered: no object this time
				}
				d := engine.Decision{Asset: &catalog.Asset{Name: a.name}, Verdict: engine.VerdictIncluded, Live: live}
				var res engine.Result
				switch r0.IntN(4) {
				case 0:
					res = engine.Result{Outcome: engine.Unchanged}
				case 1:
					res = engine.Result{Outcome: engine.MissingDependency, Reason: "waiting: " + []string{"a", "b"}[r0.IntN(2)]}
				case 2:
					res = engine.Result{Outcome: engine.Conflict, Reason: "clash"}
				default:
					res = engine.Result{Outcome: engine.MissingDependency, Reason: "waiting: a"}
				}
				want := 0
				if res.Outcome == engine.Unchanged {
					for k := range model {
						if strings.HasPrefix(k, a.name+"|") {
							delete(model, k)
						}
					}
				} else if k := a.name + "|" + string(res.Outcome); model[k] != res.Reason {
					model[k] = res.Reason
					want = 1
				}
				before := hcoEvents(rec, a.name)
				r.Asset(context.Background(), hco, &d, res)
				if got := hcoEvents(rec, a.name) - before; got != want {
					t.Fatalf("run %d step %d: asset %s %s %q: %d Events on the HCO, want %d", run, step, a.name, res.Outcome, res.Reason, got, want)
				}
			}
		}
	}
}

// hcoEvents counts the Events on the HCO about asset.
func hcoEvents(c *countingRecorder, asset string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.reasons {
		if strings.Contains(e, "@HyperConverged:") && strings.Contains(e, "asset "+asset+": ") {
			n++
		}
	}
	return n
}

// A write over a live object is Updated when what it renders changed (a
// person's patch on the HCO, a switch: apply.Syncer sets Result.Updated),
// else DriftCorrected.
func TestCorrectionOrUpdate(t *testing.T) {
	hco := obj("HyperConverged", "kubevirt-hyperconverged", "hco-uid")
	d := engine.Decision{Asset: &catalog.Asset{Name: "hco-golden-config"}, Verdict: engine.VerdictIncluded, Live: hco}
	for want, res := range map[string]engine.Result{
		"DriftCorrected": {Outcome: engine.Applied, Reason: "corrected /spec/x", Opponents: []string{"kubectl-edit"}},
		"Updated":        {Outcome: engine.Applied, Reason: "updated /spec/x", Updated: true},
	} {
		rec := &countingRecorder{}
		New(rec).Asset(context.Background(), hco, &d, res)
		if len(rec.reasons) == 0 || !strings.HasPrefix(rec.reasons[0], want+"@") {
			t.Errorf("%v: %v, want %s", res.Opponents, rec.reasons, want)
		}
	}
}
