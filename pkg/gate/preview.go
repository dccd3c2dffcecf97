package gate

import (
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// Preview folds into a preview's decisions (render, /debug/render, the
// features view) what the gate answers on the cluster's inputs alone: a
// decision whose write, or switch-off delete, the gate holds because an
// HCO input is not understood reads Invalid, one whose write waits for
// another (Decision.Waits) MissingDependency, as the controller reports
// them. It judges with a gate that knows no history (no budget spent, no
// settle clock): the preview of holds that need one, and of the window
// and pools, is render --output diff's (pkg/dryrun), by the same Judge.
func Preview(cat *catalog.Catalog, eval engine.Evaluation, now time.Time) {
	g := New(Config{Catalog: cat, SettlePeriod: -1, Now: func() time.Time { return now }})
	rc := eval.Context
	for i := range eval.Decisions {
		d := &eval.Decisions[i]
		var w Write
		switch {
		case d.Verdict == engine.VerdictIncluded && d.Desired != nil:
			op := Correct
			if d.Live == nil {
				op = Create
			}
			w = ForDecision(d, op, []string{"/spec"}, nil)
		case d.Live != nil && engine.RemovalCandidate(d, rc) != nil:
			w = ForRemoval(rc, SwitchOff, d.Asset.Name, d.Live, d.ReportOnly)
		default:
			continue
		}
		switch v := g.Judge(rc, w); v.Check {
		case "input":
			d.Verdict, d.Annotation, d.InvalidReason, d.Reason, d.Desired = engine.VerdictInvalid, v.Annotation, engine.Malformed, v.Reason, nil
		case "dependency":
			d.Verdict, d.Reason, d.Desired, d.NodeActions = engine.VerdictMissingDependency, v.Reason, nil, nil
		}
	}
}
