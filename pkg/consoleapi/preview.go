package consoleapi

import (
	"context"
	"reflect"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
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

// Compare says what the evaluation after would do that before does not:
// a write where the object is absent or its desired state differs, a
// deletion where an object present is turned off. Each is judged by a gate
// that knows no history (the window, busy pools, HCO inputs,
// dependencies: what the cluster says now), as a preview of the
// controller's own judgement.
func Compare(cat *catalog.Catalog, before, after engine.Evaluation, now time.Time) []Change {
	was := map[string]*engine.Decision{}
	for i := range before.Decisions {
		was[before.Decisions[i].Asset.Name] = &before.Decisions[i]
	}
	featureOf := featuresOf(cat)
	g := gate.New(gate.Config{Catalog: cat, SettlePeriod: -1, Now: func() time.Time { return now }})
	rc := after.Context
	out := []Change{}
	for i := range after.Decisions {
		d := &after.Decisions[i]
		b := was[d.Asset.Name]
		var c Change
		var w gate.Write
		switch {
		case d.Verdict == engine.VerdictIncluded && d.Desired != nil:
			if b != nil && b.Verdict == engine.VerdictIncluded && b.Desired != nil && reflect.DeepEqual(b.Desired.Object, d.Desired.Object) {
				continue
			}
			c.Action, c.Object = Update, engine.ObjectKey(d.Desired)
			op := gate.Correct
			if d.Live == nil {
				c.Action, op = Create, gate.Create
			}
			w = gate.ForDecision(d, op, []string{"/spec"}, nil)
		case d.Live != nil && engine.RemovalCandidate(d, rc) != nil && (b == nil || b.Verdict == engine.VerdictIncluded):
			c.Action, c.Object = Delete, engine.ObjectKey(d.Live)
			w = gate.ForRemoval(rc, gate.SwitchOff, d.Asset.Name, d.Live, d.ReportOnly)
		default:
			continue
		}
		c.Asset, c.Feature, c.Disruption = d.Asset.Name, featureOf[d.Asset.Name], w.Disruption
		v := g.Judge(rc, w)
		c.Goes = v.Go
		if !v.Go {
			c.HeldBy, c.Outcome, c.Reason = v.Check, v.Outcome, v.Reason
		}
		out = append(out, c)
	}
	return out
}

// Impacts lists each pool the changes roll with a reboot, its nodes and
// what draining them does to its VMs, read from r now (one VMI list: a
// person asked).
func Impacts(ctx context.Context, r client.Reader, eval engine.Evaluation, changes []Change) []PoolImpact {
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
	for _, p := range impact.Of(ctx, r, eval.Context, pools) {
		pi := PoolImpact{Name: p.Pool, Impact: p.String()}
		if nodes, err := eval.Context.PoolNodes(p.Pool); err == nil {
			pi.Nodes = len(nodes)
		}
		out = append(out, pi)
	}
	return out
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
