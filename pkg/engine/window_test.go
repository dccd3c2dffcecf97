package engine_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Only a write that reboots a pool is staged, only while a window is set
// and closed, or not understood (then with no opening time); without the
// annotation nothing ever is.
func TestStaging(t *testing.T) {
	ctx := func(window string, set bool) *rendercontext.RenderContext {
		hco := &unstructured.Unstructured{Object: map[string]any{}}
		if set {
			hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: window})
		}
		return rendercontext.New(rendercontext.Facts{HCO: hco})
	}
	reboot := engine.Disruption{Reboot: true, Pool: "worker"}
	sat := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC) // a Saturday
	mon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const w = "Sat,Sun 02:00-06:00 UTC"
	cases := []struct {
		name   string
		rc     *rendercontext.RenderContext
		dis    engine.Disruption
		now    time.Time
		staged bool
		opens  time.Time
	}{
		{"no window", ctx("", false), reboot, mon, false, time.Time{}},
		{"inside", ctx(w, true), reboot, sat, false, time.Time{}},
		{"outside", ctx(w, true), reboot, mon, true, time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)},
		{"reboots nothing", ctx(w, true), engine.Disruption{}, mon, false, time.Time{}},
		{"not understood", ctx("weekends", true), reboot, sat, true, time.Time{}},
		{"empty value", ctx("", true), reboot, sat, true, time.Time{}},
	}
	for _, c := range cases {
		why, opens, staged := engine.Staging(c.rc, c.dis, c.now)
		if staged != c.staged || !opens.Equal(c.opens) {
			t.Errorf("%s: staged=%v opens=%s, want %v %s (%s)", c.name, staged, opens, c.staged, c.opens, why)
		}
		if staged && !strings.Contains(why, annotations.DisruptionWindow) {
			t.Errorf("%s: the reason does not name the annotation: %s", c.name, why)
		}
	}
}
