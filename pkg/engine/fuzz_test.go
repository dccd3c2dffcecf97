package engine_test

import (
	"context"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// FuzzOptInAnnotations: whatever the HCO's switch annotations hold, every
// asset evaluates without panicking, and an asset is marked turned off by
// a person (IntentOff, the only way to removal) exactly when one of its
// intent conditions fails: a hardware or topology fact alone never does.
func FuzzOptInAnnotations(f *testing.F) {
	for _, s := range []string{"true", "false", "", "TRUE", "yes", "1", "true ", "\x00"} {
		f.Add(s, "MachineConfig/*")
	}
	// The catalog and the renderer (its parsed templates, its decode memo)
	// are built once: an input must take milliseconds, or the fuzzer's
	// deadline catches a worker mid-input.
	ev, cat, _ := setup(f, nil)
	f.Fuzz(func(t *testing.T, v, disabled string) {
		hco := map[string]string{annotations.DisabledResources: disabled}
		for _, ft := range cat.Features {
			if ft.Switch != "" {
				hco[ft.SwitchAnnotation()] = v
			}
		}
		rc := newContext(hco)
		for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview(rc)) {
			intentOnly := *d.Asset
			intentOnly.Conditions = nil
			for _, c := range d.Asset.Conditions {
				if engine.Intent(c) {
					intentOnly.Conditions = append(intentOnly.Conditions, c)
				}
			}
			intentHolds, _, _ := engine.ConditionsHold(&intentOnly, rc)
			if d.IntentOff == intentHolds {
				t.Fatalf("asset %s: IntentOff=%v but its intent conditions hold=%v", d.Asset.Name, d.IntentOff, intentHolds)
			}
		}
	})
}
