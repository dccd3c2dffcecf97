package main

import (
	"testing"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// The window the demo prints parses as the autopilot reads it and is
// closed when printed, at every hour of the week (so its "Staged" is true).
func TestClosedWindowIsClosed(t *testing.T) {
	base := time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC)
	for h := 0; h < 7*24; h++ {
		now := base.Add(time.Duration(h) * time.Hour)
		v := closedWindow(now)
		w, err := annotations.ParseDisruptionWindow(v, true)
		if err != nil {
			t.Fatalf("%s: %q: %v", now, v, err)
		}
		if w.Open(now) || w.Open(now.Add(5*time.Minute)) {
			t.Fatalf("%s: %q is open", now, v)
		}
	}
}
