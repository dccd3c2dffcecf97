package features

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes one line per feature (FEATURE, MATURITY, SWITCH,
// STATE, ASSETS with their disruption, REASON), then a summary by state.
func WriteTable(w io.Writer, ss []Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tMATURITY\tSWITCH\tSTATE\tASSETS\tREASON")
	count := map[State]int{}
	for _, s := range ss {
		count[s.State]++
		sw := "-"
		if s.Switch != "" {
			sw = s.Switch
		}
		assets := make([]string, 0, len(s.Assets))
		for _, a := range s.Assets {
			entry := a.Name
			if a.Disruption != "none" && a.Disruption != "" {
				entry += " (" + a.Disruption + ")"
			}
			assets = append(assets, entry)
		}
		reason := s.Reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Maturity, sw, s.State, strings.Join(assets, ", "), reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var parts []string
	for _, st := range []State{Active, Degraded, Waiting, Off, NotApplicable, Excluded, Paused} {
		if count[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[st], st))
		}
	}
	_, err := fmt.Fprintf(w, "\nSummary: %d features: %s\n", len(ss), strings.Join(parts, ", "))
	return err
}
