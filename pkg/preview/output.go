package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// Status is the CLI's word for a verdict.
func Status(v engine.Verdict) string {
	switch v {
	case engine.VerdictIncluded:
		return "INCLUDED"
	case engine.VerdictInactive, engine.VerdictExcluded:
		return "EXCLUDED"
	case engine.VerdictUnmanaged:
		return "UNMANAGED"
	case engine.VerdictRetained:
		return "RETAINED"
	case engine.VerdictPaused:
		return "PAUSED"
	case engine.VerdictConflict:
		return "CONFLICT"
	case engine.VerdictNodePool:
		return "NODEPOOL"
	case engine.VerdictMissingDependency:
		return "MISSING-DEPENDENCY"
	case engine.VerdictInvalid:
		return "INVALID"
	default:
		return "ERROR"
	}
}

// Entry is one asset in machine-readable output.
type Entry struct {
	Asset   string         `json:"asset"`
	Status  string         `json:"status"`
	Outcome engine.Verdict `json:"outcome"`
	Reason  string         `json:"reason,omitempty"`
	Object  map[string]any `json:"object,omitempty"`
}

// Entries converts decisions, keeping only Included ones unless all.
func Entries(ds []engine.Decision, all bool) []Entry {
	var out []Entry
	for i := range ds {
		d := &ds[i]
		if d.Verdict != engine.VerdictIncluded && !all {
			continue
		}
		e := Entry{Asset: d.Asset.Name, Status: Status(d.Verdict), Outcome: d.Verdict, Reason: d.Reason}
		if d.Desired != nil {
			e.Object = redact.Object(d.Desired).Object
		}
		out = append(out, e)
	}
	return out
}

// WriteYAML writes one YAML document per entry, headed by its status.
func WriteYAML(w io.Writer, entries []Entry) error {
	for _, e := range entries {
		fmt.Fprintf(w, "---\n# asset: %s (%s)\n", e.Asset, e.Status)
		if e.Reason != "" {
			fmt.Fprintf(w, "# reason: %s\n", oneLine(e.Reason))
		}
		if e.Object == nil {
			continue
		}
		y, err := objyaml.Marshal(e.Object)
		if err != nil {
			return err
		}
		if _, err := w.Write(y); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the entries as a JSON array.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteStatus writes a table of every decision and a summary line.
func WriteStatus(w io.Writer, ds []engine.Decision) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ASSET\tSTATUS\tOBJECT\tDISRUPTION\tREASON")
	counts := map[string]int{}
	for i := range ds {
		d := &ds[i]
		obj := "-"
		if t := d.Target(); t != nil {
			obj = engine.ObjectKey(t)
		}
		s := Status(d.Verdict)
		counts[s]++
		disruption := "-" // nothing would be written
		if d.Verdict == engine.VerdictIncluded {
			disruption = engine.DisruptionOf(d).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Asset.Name, s, obj, disruption, oneLine(d.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var parts []string
	for _, s := range []string{"INCLUDED", "EXCLUDED", "UNMANAGED", "RETAINED", "PAUSED", "CONFLICT", "MISSING-DEPENDENCY", "NODEPOOL", "INVALID", "ERROR"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], strings.ToLower(s)))
		}
	}
	_, err := fmt.Fprintf(w, "\nSummary: %d assets: %s\n", len(ds), strings.Join(parts, ", "))
	return err
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
