package engine

import (
	"fmt"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Staging says whether a write with disruption dis is staged at now: it
// reboots a pool and the HCO's disruption window
// (platform.kubevirt.io/disruption-window) is closed, or not understood
// (a typo never lets a reboot through). opens is when the window opens;
// zero when it cannot be known. Writes that reboot nothing are never
// staged, and without the annotation nothing is.
func Staging(rc *rendercontext.RenderContext, dis Disruption, now time.Time) (why string, opens time.Time, staged bool) {
	if !dis.Reboot {
		return "", time.Time{}, false
	}
	v, ok := rc.HCOAnnotation(annotations.DisruptionWindow)
	w, err := annotations.ParseDisruptionWindow(v, ok)
	switch {
	case err != nil:
		return fmt.Sprintf("staged: %v; writes that reboot a pool wait until it is fixed", err), time.Time{}, true
	case w.IsZero() || w.Open(now):
		return "", time.Time{}, false
	}
	opens = w.NextOpen(now)
	return fmt.Sprintf("staged: it reboots pool %s and the disruption window (%s=%q) is closed; it is sent when the window opens at %s",
		poolName(dis.Pool), annotations.DisruptionWindow, v, opens.UTC().Format(time.RFC3339)), opens, true
}

func poolName(p string) string {
	if p == "" {
		return "(unnamed)"
	}
	return p
}
