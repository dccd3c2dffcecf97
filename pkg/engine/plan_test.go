package engine_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
)

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
		eval := ev.Preview(context.Background(), cat, rc, liveMap{})
		gate.Preview(cat, eval, time.Now()) // the hold is the gate's
		for _, d := range eval.Decisions {
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
