package annotations

import "testing"

// report-only, in any case and spacing, is its own activation and mode:
// never read as a list of names, nor as "unmanaged"; and a report-only
// object is left alone by every path that deletes.
func TestReportOnlySpellings(t *testing.T) {
	for _, v := range []string{"report-only", " Report-Only ", "REPORT-ONLY\n"} {
		if a := ParseActivation(v, true); !a.ReportOnly || a.All || a.Paused || a.Names != nil {
			t.Errorf("activation %q = %+v", v, a)
		}
		m, err := ParseMode(map[string]string{Mode: v})
		if err != nil || m != ModeReportOnly {
			t.Errorf("mode %q = %v %v", v, m, err)
		}
		if !LeftAlone(map[string]string{Mode: v}) {
			t.Errorf("mode %q is not left alone by deletions", v)
		}
	}
	if a := ParseActivation("kubelet-worker, Report-Only", true); !a.ReportOnly || a.Names != nil {
		t.Error("report-only inside a list must never let the others be written")
	}
}
