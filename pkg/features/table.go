package features

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// writesNothing are the outcomes of an asset the autopilot does not write
// (nor will, until a person or the cluster changes): its pools are not
// among those the feature reboots.
// (A paused or report-only asset is written once the autopilot is active
// again: its pools count, so a paused autopilot shows what resuming does.)
var writesNothing = map[engine.Outcome]bool{engine.Excluded: true, engine.Inactive: true, engine.Unmanaged: true,
	engine.Retained: true, engine.NodePool: true}

// WriteTable writes one line per feature (FEATURE, MATURITY, SWITCH,
// STATE, the number of ASSETS, the pools a write would REBOOT, REASON),
// the settings each asset leaves to their owners, then a summary by state. The assets themselves are in the JSON form
// (/debug/features) and in render --output status.
func WriteTable(w io.Writer, ss []Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tMATURITY\tSWITCH\tSTATE\tASSETS\tREBOOTS\tREASON")
	count := map[State]int{}
	for _, s := range ss {
		count[s.State]++
		sw := "-"
		if s.Switch != "" {
			sw = s.Switch
		}
		var pools []string
		for _, a := range s.Assets {
			if writesNothing[engine.Outcome(a.Outcome)] {
				continue // as status shows it: never written, reboots nothing
			}
			if p, ok := strings.CutPrefix(a.Disruption, "reboots pool "); ok && !slices.Contains(pools, p) {
				pools = append(pools, p)
			}
		}
		reboots := "-"
		if len(pools) > 0 {
			reboots = "pool " + strings.Join(pools, ", ")
		}
		reason := s.Reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Maturity, sw, s.State, len(s.Assets), reboots, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What the autopilot leaves to another owner: the owner's value is the
	// one in effect (an admin's KubeletConfig, a GitOps controller).
	for _, s := range ss {
		for _, a := range s.Assets {
			if len(a.Deferred) == 0 {
				continue
			}
			ds := make([]string, len(a.Deferred))
			for i, d := range a.Deferred {
				ds[i] = d.String()
			}
			if _, err := fmt.Fprintf(w, "%s: %s leaves to their owners: %s\n", s.Name, a.Name, strings.Join(ds, ", ")); err != nil {
				return err
			}
		}
	}
	var parts []string
	for _, st := range []State{Active, Degraded, Drifted, Waiting, Off, NotApplicable, Excluded, Paused} {
		if count[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
		}
	}
	_, err := fmt.Fprintf(w, "\nSummary: %d features: %s\n", len(ss), strings.Join(parts, ", "))
	return err
}
