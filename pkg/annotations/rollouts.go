package annotations

import (
	"strings"
	"time"
)

// FactRolloutsAccepted says what FactRollouts holds.
const FactRolloutsAccepted = "comma-separated RFC 3339 times (written by the autopilot; remove the annotation to reset the budget)"

// ParseFactRollouts reads FactRollouts: the times the object was
// rewritten because facts changed, oldest first.
func ParseFactRollouts(value string) ([]time.Time, error) {
	var out []time.Time
	for _, f := range strings.Split(value, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f)
		if err != nil {
			return nil, &Invalid{Annotation: FactRollouts, Value: value, Accepted: FactRolloutsAccepted, Detail: err.Error(), Err: err}
		}
		out = append(out, t)
	}
	return out, nil
}

// FormatFactRollouts writes FactRollouts.
func FormatFactRollouts(ts []time.Time) string {
	fs := make([]string, len(ts))
	for i, t := range ts {
		fs[i] = t.UTC().Format(time.RFC3339)
	}
	return strings.Join(fs, ",")
}
