package engine_test

import (
	"context"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// FuzzOptInAnnotations: whatever the HCO's switch annotations hold, every
// asset evaluates without panicking, and nothing is ever a removal
// candidate unless a person's switch is off.
func FuzzOptInAnnotations(f *testing.F) {
	for _, s := range []string{"true", "false", "", "TRUE", "yes", "1", "true ", "\x00"} {
		f.Add(s, "MachineConfig/*")
	}
	f.Fuzz(func(t *testing.T, v, disabled string) {
		hco := map[string]string{annotations.DisabledResources: disabled}
		for _, sw := range []string{"enable-pci-passthrough", "enable-loadaware", "enable-higher-density", "enable-aaq", "enable-usb-passthrough"} {
			hco[annotations.SwitchPrefix+sw] = v
		}
		ev, cat, rc := setup(t, hco)
		for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview(rc)) {
			if engine.RemovalCandidate(&d, rc) != nil && !d.IntentOff {
				t.Fatalf("asset %s is a removal candidate without a person's intent", d.Asset.Name)
			}
		}
	})
}
