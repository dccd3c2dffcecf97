package consoleapi

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Preview is what setting one HCO annotation would make the autopilot do:
// each object it would write or delete, what that does to nodes and
// whether the gate lets it go now, and what each pool's rollout does to
// its VMs.
type Preview struct {
	Annotation string `json:"annotation"`
	// Value is the value previewed; nil: the annotation removed.
	Value   *string         `json:"value"`
	Changes []Change        `json:"changes"`
	Pools   []PoolImpact    `json:"pools"`
	Notices []engine.Notice `json:"notices"`
}

// Change is one object's write or deletion.
type Change struct {
	Asset   string `json:"asset"`
	Feature string `json:"feature,omitempty"`
	Object  string `json:"object"`
	// Action is create, update or delete.
	Action     string            `json:"action"`
	Disruption engine.Disruption `json:"disruption"`
	// Goes: the gate lets it go now; else HeldBy (its check), Outcome and
	// Reason say why and until when.
	Goes    bool           `json:"goes"`
	HeldBy  string         `json:"heldBy,omitempty"`
	Outcome engine.Outcome `json:"outcome,omitempty"`
	Reason  string         `json:"reason,omitempty"`
}

// PoolImpact is what a rollout of one pool does: its nodes drained in
// turn, and each VM's fate (pkg/impact).
type PoolImpact struct {
	Name   string `json:"name"`
	Nodes  int    `json:"nodes"`
	Impact string `json:"impact"`
}

// Actions of a Change.
const (
	Create = "create"
	Update = "update"
	Delete = "delete"
)

// Compare says what the evaluation after would write or delete that the
// evaluation before would not: a write where the object is absent or
// differs from what is desired (the drift the controller's Syncer reads,
// without the fields left to their owners), a deletion of a switched-off
// object. Both are planner evaluations, before the gate: each change is
// judged here by a gate that knows no history (HCO inputs, dependencies,
// the window, busy pools: what the cluster says now), as a preview of the
// controller's own judgement. A correction of labels or annotations alone
// rolls nothing.
func Compare(cat *catalog.Catalog, before, after engine.Evaluation, now time.Time) []Change {
	was := map[string]bool{}
	for _, c := range changes(before) {
		was[c.key()] = true
	}
	featureOf := featuresOf(cat)
	g := gate.New(gate.Config{Catalog: cat, SettlePeriod: -1, Now: func() time.Time { return now }})
	out := []Change{}
	for _, c := range changes(after) {
		if was[c.key()] {
			continue
		}
		v := g.Judge(after.Context, c.write)
		ch := Change{Asset: c.d.Asset.Name, Feature: featureOf[c.d.Asset.Name], Object: c.object, Action: c.action, Disruption: c.write.Disruption, Goes: v.Go}
		if !v.Go {
			ch.HeldBy, ch.Outcome, ch.Reason = v.Check, v.Outcome, v.Reason
		}
		out = append(out, ch)
	}
	return out
}

// change is one write or deletion an evaluation would send.
type change struct {
	d              *engine.Decision
	action, object string
	drift          []string
	write          gate.Write
}

// key tells the same change in two evaluations apart from another: the
// object, the action and the fields it changes.
func (c change) key() string {
	return c.action + " " + c.object + " " + strings.Join(c.drift, ",")
}

func changes(eval engine.Evaluation) []change {
	rc := eval.Context
	var out []change
	for i := range eval.Decisions {
		d := &eval.Decisions[i]
		if d.ReportOnly {
			continue // compared, never sent
		}
		switch {
		case d.Verdict == engine.VerdictIncluded && d.Desired != nil:
			c := change{d: d, action: Create, object: engine.ObjectKey(d.Desired)}
			op := gate.Create
			if d.Live != nil {
				c.drift = engine.WithoutDeferred(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure), d.Deferred)
				if len(c.drift) == 0 {
					continue
				}
				c.action, op = Update, gate.Correct
			}
			c.write = gate.ForDecision(d, op, c.drift, nil)
			if d.Live != nil && !engine.ReachesNodes(c.drift) && !d.MovesPools {
				c.write.Disruption = engine.Disruption{} // metadata alone reaches no node
			}
			out = append(out, c)
		case d.Live != nil && engine.RemovalCandidate(d, rc) != nil:
			c := change{d: d, action: Delete, object: engine.ObjectKey(d.Live)}
			c.write = gate.ForRemoval(rc, gate.SwitchOff, d.Asset.Name, d.Live, d.ReportOnly)
			out = append(out, c)
		}
	}
	return out
}

// Impacts lists each pool the changes roll with a reboot, its nodes and
// what draining them does to its VMs, in counts (of, the controller's
// counts: pkg/impact).
func Impacts(ctx context.Context, of PoolImpacter, eval engine.Evaluation, changes []Change) []PoolImpact {
	seen := map[string]bool{}
	var pools []string
	for _, c := range changes {
		if !c.Disruption.Reboot {
			continue
		}
		for _, p := range c.Disruption.Rolled() {
			if !seen[p] {
				seen[p] = true
				pools = append(pools, p)
			}
		}
	}
	out := []PoolImpact{}
	if len(pools) == 0 {
		return out
	}
	sort.Strings(pools)
	for _, p := range of.PoolImpacts(ctx, eval.Context, pools) {
		out = append(out, PoolImpact{Name: p.Pool, Nodes: len(p.Nodes), Impact: p.Counts()})
	}
	return out
}

// PoolImpacter counts what a rollout of pools does to their VMs (the
// controller, from its counts).
type PoolImpacter interface {
	PoolImpacts(ctx context.Context, rc *rendercontext.RenderContext, pools []string) []impact.Pool
}

func featuresOf(cat *catalog.Catalog) map[string]string {
	out := map[string]string{}
	for i := range cat.Features {
		for _, m := range cat.Features[i].Members {
			out[m] = cat.Features[i].Name
		}
	}
	return out
}
