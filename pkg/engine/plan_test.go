package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// While the golden HCO has not converged (its write throttled or failed,
// its decision invalid), every asset that renders from the HCO keeps its
// last applied state; the others proceed.
func TestDependentsWaitForTheHCOToConverge(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	var waited, proceeded int
	for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, func(d *engine.Decision, _ *rendercontext.RenderContext) engine.StepResult {
		if d.Asset.ReconcileOrder == 0 {
			return engine.StepResult{Unconverged: "Throttled: a fight over /spec/x"}
		}
		return engine.StepResult{}
	}).Decisions {
		if d.Asset.ReconcileOrder == 0 {
			continue
		}
		reads := ev.Renderer.ReadsHCO(d.Asset.Path)
		switch {
		case reads && d.Verdict != engine.VerdictMissingDependency:
			t.Errorf("asset %s reads the HCO but is %s while it has not converged", d.Asset.Name, d.Verdict)
		case reads:
			waited++
			if !strings.Contains(d.Reason, "a fight over /spec/x") {
				t.Errorf("asset %s: reason %q does not say why", d.Asset.Name, d.Reason)
			}
		case d.Verdict == engine.VerdictIncluded:
			proceeded++
		}
	}
	if waited == 0 || proceeded == 0 {
		t.Fatalf("want some assets waiting and some proceeding: %d waited, %d proceeded", waited, proceeded)
	}
}

// The HCO asset held in backoff (no render, no object) still holds its
// dependents: it is known by its asset, not by a rendered object.
func TestDependentsWaitWhileTheHCOIsInBackoff(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	ev.Hold = func(a *catalog.Asset) (string, bool) {
		return "retrying in 4s: apply refused by a webhook", a.ReconcileOrder == 0
	}
	waited := 0
	for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, func(*engine.Decision, *rendercontext.RenderContext) engine.StepResult { return engine.StepResult{} }).Decisions {
		if d.Asset.ReconcileOrder != 0 && ev.Renderer.ReadsHCO(d.Asset.Path) {
			if d.Verdict != engine.VerdictMissingDependency || !d.AwaitsHCO || !strings.Contains(d.Reason, "refused by a webhook") {
				t.Errorf("asset %s: %s %q while the HCO is in backoff", d.Asset.Name, d.Verdict, d.Reason)
			}
			waited++
		}
	}
	if waited == 0 {
		t.Fatal("no asset reads the HCO")
	}
}

// A root-exclusion entry not understood (malformed, or a kind no asset
// renders: a plural) never lowers a protection: what reboots a pool or
// changes remediation is left as it is; the rest, and an understood list,
// proceed.
func TestExclusionNotUnderstoodHoldsRebootingAssets(t *testing.T) {
	for value, held := range map[string]bool{
		"machineconfigs/99-worker-kubevirt-psi-karg": true,
		"MachineConfig:99-worker-kubevirt-psi-karg":  true,
		"MachineConfig/99-nope, broken":              true,
		"machineconfig/99-nope":                      false,
		"configmaps/x/y, KubeDescheduler/*/cluster":  true,
	} {
		ev, cat, rc := setup(t, map[string]string{annotations.DisabledResources: value})
		for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview).Decisions {
			if d.Asset.Name == "psi-enable" && (d.Verdict == engine.VerdictInvalid) != held {
				t.Errorf("%q: psi-enable %s (%s), held=%v wanted", value, d.Verdict, d.Reason, held)
			}
			if d.Asset.Name == "hco-golden-config" && d.Verdict != engine.VerdictIncluded {
				t.Errorf("%q: the golden config (no reboot) is %s", value, d.Verdict)
			}
		}
	}
}
