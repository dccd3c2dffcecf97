package gate

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// FactRolloutBudget and FactRolloutWindow bound the rewrites of one
// reboot-causing object that changed facts ask for: the settle period
// and the disruption window bound their rate, this their count. A node
// may set labels under *.node.kubernetes.io/ on its own Node (NFD's
// feature.node.kubernetes.io/ among them: k8s.io/api core/v1
// well_known_labels.go, LabelNamespaceSuffixNode), so one node that
// relabels itself could otherwise roll its whole pool again and again.
// Counted on the object (annotations.FactRollouts), not in this process:
// a restart forgets nothing, and a person who removes the record lets the
// next write go at once.
const (
	FactRolloutBudget = 2
	FactRolloutWindow = 24 * time.Hour
)

// factBudget judges w against its object's fact budget at now: the
// record to write if w goes (a fact-driven reboot), or why it is held and
// for how long. A write that facts did not ask for is not counted, nor
// one that carries a person's change made since it was written: the
// stamp's intent print tells (settle.FactDriven), not this process's
// memory, so a restart or a new leader decides the same.
func factBudget(w Write, now time.Time, resync time.Duration) (record, why string, retry time.Duration, spent bool) {
	s := w.Settle
	if s == nil || !s.Exists || w.Op.Deletes() || !w.Disruption.Reboot {
		return "", "", 0, false
	}
	if !settle.Charged(s.Now, s.Live) {
		// Only a stamp that tells (facts, object and intent) charges the
		// budget: a guess never stages a write for a day.
		return "", "", 0, false
	}
	if s.RolloutsErr != nil {
		// Not understood: unknown holds, never "budget left".
		return "", fmt.Sprintf("changed facts ask to rewrite it, which reboots a pool, and its record of such rewrites is not understood (%v): remove annotation %s to let it go", s.RolloutsErr, annotations.FactRollouts), resync, true
	}
	var recent []time.Time
	for _, t := range s.Rollouts {
		if now.Sub(t) < FactRolloutWindow {
			recent = append(recent, t)
		}
	}
	slices.SortFunc(recent, time.Time.Compare)
	if len(recent) >= FactRolloutBudget {
		next := recent[len(recent)-FactRolloutBudget].Add(FactRolloutWindow)
		return "", fmt.Sprintf("changed node facts already rewrote it %d times in %s, rebooting its pool each time (a node whose labels keep changing?); this rewrite waits until %s, or until a person removes annotation %s",
			len(recent), FactRolloutWindow, next.UTC().Format(time.RFC3339), annotations.FactRollouts), min(max(next.Sub(now), time.Second), resync), true
	}
	return annotations.FormatFactRollouts(append(recent, now)), "", 0, false
}
