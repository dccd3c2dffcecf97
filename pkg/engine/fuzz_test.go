package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// switchSpellings is the switch vocabulary written out independently of
// annotations.ParseBool, so the fuzz target checks the parser instead of
// repeating it: lower-cased and trimmed, what each spelling means.
var switchSpellings = map[string]bool{
	"true": true, "yes": true, "y": true, "on": true, "t": true, "1": true,
	"false": false, "no": false, "n": false, "off": false, "f": false, "0": false,
}

// FuzzOptInAnnotations: whatever the HCO's switch annotations hold, every
// asset evaluates without panicking, and an asset is marked turned off by
// a person (IntentOff, the only way to removal) exactly when one of its
// intent conditions fails: a hardware or topology fact alone never does.
// A switch value outside the vocabulary never turns anything off: every
// asset reading it is left as it is (Invalid, or waiting for the HCO),
// never written, never IntentOff.
func FuzzOptInAnnotations(f *testing.F) {
	for _, s := range []string{"true", "false", "", "TRUE", "yes", "1", "true ", "\x00", "ture", "On", " no\n", "enabled"} {
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
		_, understood := switchSpellings[strings.ToLower(strings.TrimSpace(v))]
		eval := ev.Preview(context.Background(), cat, rc, liveMap{})
		for _, d := range eval.Decisions {
			if !understood && readsASwitch(d.Asset) {
				// Left as it is: Invalid, or waiting for an HCO that is
				// itself Invalid; never written, never turned off.
				if d.Verdict == engine.VerdictIncluded || d.Verdict == engine.VerdictInactive || d.IntentOff {
					t.Fatalf("asset %s with switch value %q: outcome %s IntentOff=%v, want it left as it is", d.Asset.Name, v, d.Verdict, d.IntentOff)
				}
				continue
			}
			intentOnly := *d.Asset
			intentOnly.Conditions = nil
			for _, c := range d.Asset.Conditions {
				if engine.Intent(c) {
					intentOnly.Conditions = append(intentOnly.Conditions, c)
				}
			}
			// Judged on the effective HCO (after the golden config), as
			// Plan judged every asset after it.
			judged := eval.Context
			if d.Asset.ReconcileOrder == 0 {
				judged = rc
			}
			intentHolds, _, _, err := engine.ConditionsHold(&intentOnly, judged)
			if err != nil {
				t.Fatalf("asset %s: %v with an understood switch value %q", d.Asset.Name, err, v)
			}
			if d.IntentOff == intentHolds {
				t.Fatalf("asset %s: IntentOff=%v but its intent conditions hold=%v", d.Asset.Name, d.IntentOff, intentHolds)
			}
		}
	})
}

// readsASwitch: the asset has a switch condition (an annotation condition
// with a value); assets that read a switch only in their template are
// checked by the render tests.
func readsASwitch(a *catalog.Asset) bool {
	for _, c := range a.Conditions {
		if c.Type == catalog.CondAnnotation && c.Value != nil && strings.HasPrefix(c.Key, "platform.kubevirt.io/enable-") {
			return true
		}
	}
	return false
}
