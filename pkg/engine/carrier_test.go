package engine

import (
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

// A tombstone carried by assets goes with a carrier's write or once its
// object is in place; with no carrier active it goes alone, unless it is
// carried-only (another writer's object that still does its job): then it
// is kept.
func TestCarrierWaits(t *testing.T) {
	step := func(v Verdict, o Outcome) Step {
		return Step{Decision: &Decision{Asset: &catalog.Asset{Name: "a"}, Verdict: v}, Result: Result{Outcome: o}}
	}
	for _, c := range []struct {
		name  string
		steps map[string]Step
		only  bool
		waits bool
	}{
		{"carrier written", map[string]Step{"a": step(VerdictIncluded, Applied)}, true, false},
		{"carrier in place", map[string]Step{"a": step(VerdictIncluded, Unchanged)}, true, false},
		{"carrier held", map[string]Step{"a": step(VerdictIncluded, Staged)}, false, true},
		{"carrier off", map[string]Step{"a": step(VerdictInactive, "")}, false, false},
		{"carrier off, carried-only", map[string]Step{"a": step(VerdictInactive, "")}, true, true},
		{"carrier excluded, carried-only", map[string]Step{"a": step(VerdictExcluded, "")}, true, true},
		{"carrier not evaluated", map[string]Step{}, false, true},
	} {
		if _, waits := CarrierWaits("a", c.only, c.steps); waits != c.waits {
			t.Errorf("%s: waits %v, want %v", c.name, waits, c.waits)
		}
	}
}
