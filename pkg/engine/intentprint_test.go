package engine_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// A person's edit of the HCO reaches an object's intent print only
// through what its template reads: an HCO field no template reads, and an
// annotation that says how or when the autopilot acts (the window,
// yield-to), change no object and no stamp, so they cost no write; an
// edit an object renders from changes its object and its intent print
// together (a person's change, never taken for the facts').
func TestIntentPrintFollowsWhatTheTemplateReads(t *testing.T) {
	ev, cat, rc := setup(t, nil)
	ann := allSwitchesOn(cat)
	delete(ann, annotations.Autopilot)
	base := func() *unstructured.Unstructured {
		h := rc.HCOObject()
		h.SetAnnotations(ann)
		_ = unstructured.SetNestedSlice(h.Object, []any{map[string]any{"name": "CPUManager"}}, "spec", "featureGates")
		return h
	}
	stamps := func(h *unstructured.Unstructured) map[string]engine.Decision {
		out := map[string]engine.Decision{}
		c := rc.WithHCO(h)
		for i := range cat.Assets {
			a := &cat.Assets[i]
			if d := ev.Evaluate(context.Background(), a, c, liveMap{}); d.Desired != nil && d.FactPrint != "" {
				out[a.Name] = d
			}
		}
		return out
	}
	before := stamps(base())
	if len(before) == 0 {
		t.Fatal("no asset stamps facts: the test exercises nothing")
	}
	r := rand.New(rand.NewSource(7))
	unread := []func(*unstructured.Unstructured){
		func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, fmt.Sprint(r.Int()), "spec", "unrelated", "field")
		},
		func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, int64(r.Intn(50)+6), "spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster")
		},
		func(h *unstructured.Unstructured) {
			// Every switch off but one, in turn: an asset that does not
			// read a switch keeps its intent when it flips.
			a := h.GetAnnotations()
			for k := range a {
				if r.Intn(3) == 0 {
					delete(a, k)
				}
			}
			h.SetAnnotations(a)
		},
		func(h *unstructured.Unstructured) {
			// Feature gates the templates do not ask for, in another order.
			_ = unstructured.SetNestedSlice(h.Object, []any{map[string]any{"name": "Other"}, map[string]any{"name": "CPUManager"}}, "spec", "featureGates")
		},
		func(h *unstructured.Unstructured) {
			a := h.GetAnnotations()
			a[annotations.DisruptionWindow] = "Sat 02:00-06:00 UTC"
			a[annotations.YieldTo] = "argocd-controller"
			h.SetAnnotations(a)
		},
	}
	for i, edit := range append(append(unread, unread...), unread...) {
		h := base()
		edit(h)
		for name, d := range stamps(h) {
			was := before[name]
			if d.ObjectPrint != was.ObjectPrint {
				continue // this asset reads it (the descheduler reads live migration): not this property
			}
			if d.IntentPrint != was.IntentPrint {
				t.Errorf("edit %d: asset %s renders the same object but its intent print changed: a stamp write for nothing", i, name)
			}
		}
	}
	// An edit a template renders from: the CPUManager feature gate off.
	h := base()
	_ = unstructured.SetNestedSlice(h.Object, []any{map[string]any{"name": "CPUManager", "state": "Disabled"}}, "spec", "featureGates")
	changed := 0
	for name, d := range stamps(h) {
		if was := before[name]; d.ObjectPrint != was.ObjectPrint {
			changed++
			if d.IntentPrint == was.IntentPrint {
				t.Errorf("asset %s: a person's edit changed the object, not its intent print: it would be taken for the facts'", name)
			}
		}
	}
	if changed == 0 {
		t.Fatal("the feature gate changed no object: the test exercises nothing")
	}
}
