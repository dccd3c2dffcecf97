package engine_test

import (
	"context"
	"io/fs"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// While the golden HCO has not converged (its write throttled or failed,
// its decision invalid), every asset that renders from the HCO keeps its
// last applied state; the others proceed.
func TestDependentsWaitForTheHCOToConverge(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true", "platform.kubevirt.io/enable-ksm-zero-only": "true"})
	var waited, proceeded, byCondition int
	walk := ev.Begin(context.Background(), cat, rc, liveMap{})
	if len(walk.Golden) != 1 || walk.Golden[0].Asset.ReconcileOrder != 0 {
		t.Fatalf("the golden config is evaluated first, alone: %d decisions", len(walk.Golden))
	}
	for _, d := range walk.Rest(nil, "Throttled: a fight over /spec/x").Decisions {
		if d.Asset.ReconcileOrder == 0 {
			continue
		}
		reads, condition := readsHCOByHand(t, d.Asset)
		switch {
		case reads && d.Verdict != engine.VerdictMissingDependency:
			t.Errorf("asset %s reads the HCO but is %s while it has not converged", d.Asset.Name, d.Verdict)
		case !reads && d.Verdict == engine.VerdictMissingDependency && d.AwaitsHCO:
			t.Errorf("asset %s does not read the HCO but waits for it", d.Asset.Name)
		case reads:
			waited++
			if condition {
				byCondition++
			}
			if !strings.Contains(d.Reason, "a fight over /spec/x") {
				t.Errorf("asset %s: reason %q does not say why", d.Asset.Name, d.Reason)
			}
		case d.Verdict == engine.VerdictIncluded:
			proceeded++
		}
	}
	if waited == 0 || proceeded == 0 || byCondition == 0 {
		t.Fatalf("want some assets waiting (some for an HCO condition alone) and some proceeding: %d waited (%d by condition), %d proceeded", waited, byCondition, proceeded)
	}
}

// readsHCOByHand says, independently of the renderer, whether an asset
// reads the HCO's spec: its template's text names the HCO or a feature
// gate, or a condition reads an HCO field or feature gate (condition).
func readsHCOByHand(t *testing.T, a *catalog.Asset) (reads, condition bool) {
	src, err := fs.ReadFile(assets.FS, a.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range a.Conditions {
		if c.Type == catalog.CondFeatureGate || c.Type == catalog.CondHCOFieldUnconfigured {
			condition = true
		}
	}
	text := string(src)
	inTemplate := strings.Contains(text, ".HCO") || strings.Contains(text, "featureGate")
	return inTemplate || condition, condition && !inTemplate
}

// The HCO asset held in backoff (no render, no object) still holds its
// dependents: it is known by its asset, not by a rendered object.
func TestDependentsWaitWhileTheHCOIsInBackoff(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	ev.Hold = func(a *catalog.Asset) (string, bool) {
		return "retrying in 4s: apply refused by a webhook", a.ReconcileOrder == 0
	}
	waited := 0
	for _, d := range ev.Begin(context.Background(), cat, rc, liveMap{}).Rest(nil, "").Decisions {
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
		for _, d := range ev.Preview(context.Background(), cat, rc, liveMap{}).Decisions {
			if d.Asset.Name == "psi-enable" && (d.Verdict == engine.VerdictInvalid) != held {
				t.Errorf("%q: psi-enable %s (%s), held=%v wanted", value, d.Verdict, d.Reason, held)
			}
			if d.Asset.Name == "hco-golden-config" && d.Verdict != engine.VerdictIncluded {
				t.Errorf("%q: the golden config (no reboot) is %s", value, d.Verdict)
			}
		}
	}
}

// What the autopilot did not write is not assumed: in report-only the
// HCO is not written, so the assets after the golden config render from
// the HCO in effect (the descheduler's eviction limit follows the live
// live-migration setting), never from the golden one it would apply;
// when the golden config is applied they render from it.
func TestPreviewReportOnlyKeepsTheHCOInEffect(t *testing.T) {
	for _, reportOnly := range []bool{true, false} {
		ann := map[string]string{"platform.kubevirt.io/enable-loadaware": "true"}
		if reportOnly {
			ann["platform.kubevirt.io/autopilot"] = "report-only"
		}
		ev, cat, rc := setup(t, ann)
		hco := rc.HCOObject()
		if err := unstructured.SetNestedField(hco.Object, int64(9), "spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"); err != nil {
			t.Fatal(err)
		}
		rc = rc.WithHCO(hco)
		var total int64 = -1
		for _, d := range ev.Preview(context.Background(), cat, rc, liveMap{}).Decisions {
			if d.Desired != nil && d.Desired.GetKind() == "KubeDescheduler" {
				total, _, _ = unstructured.NestedInt64(d.Desired.Object, "spec", "evictionLimits", "total")
			}
		}
		want := int64(5) // the golden config's value
		if reportOnly {
			want = 9 // the value the cluster runs
		}
		if total != want {
			t.Errorf("report-only=%v: eviction limit %d, want %d", reportOnly, total, want)
		}
	}
}
