// Package features turns the per-asset decisions of one evaluation into the
// admin's view of features: for each, its maturity, its switch, its state on
// this cluster with the reason, and the assets it owns with their
// disruption. The render CLI (--output features), /debug/features and the
// README table read it, so they cannot disagree.
package features

import (
	"slices"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// State is a feature's state on one cluster.
type State string

// States, in the order an admin acts on them.
const (
	// Degraded: on, but an asset failed, is invalid, throttled or in conflict.
	Degraded State = "degraded"
	// Waiting: on, but a dependency (a CRD, an operand image) is missing.
	Waiting State = "waiting"
	// Active: on, and every applicable asset is applied.
	Active State = "active"
	// Off: its switch is not "true" on the HCO.
	Off State = "off"
	// NotApplicable: on, but the cluster lacks what it is for (hardware,
	// topology, an HCO setting the admin made).
	NotApplicable State = "not-applicable"
	// Excluded: every asset is root-excluded or marked unmanaged.
	Excluded State = "excluded"
	// Paused: the HCO's platform.kubevirt.io/autopilot switch leaves it out.
	Paused State = "paused"
)

// Status is one feature on one cluster.
type Status struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Maturity    catalog.Maturity `json:"maturity"`
	// Switch is the HCO annotation turning it on ("" for always-on features).
	Switch string        `json:"switch,omitempty"`
	State  State         `json:"state"`
	Reason string        `json:"reason,omitempty"`
	Assets []AssetStatus `json:"assets"`
}

// AssetStatus is one of a feature's assets.
type AssetStatus struct {
	Name       string         `json:"name"`
	Object     string         `json:"object,omitempty"`
	Outcome    engine.Outcome `json:"outcome"`
	Disruption string         `json:"disruption"`
	Reason     string         `json:"reason,omitempty"`
}

// Of summarizes decisions (one per catalog asset, as engine.Plan returns
// them, possibly narrowed) into one Status per feature, in catalog order.
func Of(cat *catalog.Catalog, rc *rendercontext.RenderContext, ds []engine.Decision) []Status {
	byAsset := make(map[string]*engine.Decision, len(ds))
	for i := range ds {
		byAsset[ds[i].Asset.Name] = &ds[i]
	}
	out := make([]Status, 0, len(cat.Features))
	for i := range cat.Features {
		f := &cat.Features[i]
		s := Status{Name: f.Name, Description: f.Description, Maturity: f.Maturity, Switch: f.SwitchAnnotation()}
		var members []*engine.Decision
		for _, n := range f.Members {
			d := byAsset[n]
			if d == nil {
				continue
			}
			members = append(members, d)
			s.Assets = append(s.Assets, assetStatus(d))
		}
		s.State, s.Reason = state(f, rc, members)
		if s.State == Active || s.State == Waiting {
			s.Reason = withReports(f, rc, s.Reason)
		}
		out = append(out, s)
	}
	return out
}

// withReports adds the facts the feature reports to its reason.
func withReports(f *catalog.Feature, rc *rendercontext.RenderContext, reason string) string {
	var notes []string
	if slices.Contains(f.Reports, catalog.ReportSwap) {
		if gaps := rc.SwapGaps(); len(gaps) > 0 {
			notes = append(notes, strings.Join(gaps, "; ")+"; higher density overcommits memory beyond 120% only once every VM node does")
		}
	}
	if reason != "" {
		notes = append([]string{reason}, notes...)
	}
	return strings.Join(notes, "; ")
}

func assetStatus(d *engine.Decision) AssetStatus {
	as := AssetStatus{Name: d.Asset.Name, Outcome: d.Outcome, Reason: d.Reason, Disruption: string(d.Asset.Disruption)}
	if t := d.Target(); t != nil {
		as.Object = t.GetKind() + " " + key(t.GetNamespace(), t.GetName())
		as.Disruption = engine.DisruptionOf(d).String()
	}
	return as
}

func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// state reads the feature's state from its members' outcomes. The switch
// decides first (off is off, whatever else holds), then what needs an
// admin (degraded, waiting), then what is running.
func state(f *catalog.Feature, rc *rendercontext.RenderContext, ds []*engine.Decision) (State, string) {
	if len(ds) == 0 {
		return NotApplicable, "none of its assets was evaluated"
	}
	if f.Switch != "" {
		on, err := rc.Switch(f.Switch)
		if err != nil {
			return Degraded, err.Error() + "; its assets are left as they are"
		}
		if !on {
			return Off, "the switch is not on in the HCO's annotations"
		}
	}
	if d := first(ds, engine.Paused); d != nil && all(ds, engine.Paused) {
		return Paused, d.Reason
	}
	if d := first(ds, engine.Failed, engine.Invalid, engine.Conflict, engine.Throttled); d != nil {
		return Degraded, d.Asset.Name + ": " + string(d.Outcome) + ": " + d.Reason
	}
	if n := f.Needs; n != nil {
		if obj, err := rc.Lookup(n.Object.APIVersion, n.Object.Kind, n.Object.Namespace, n.Object.Name); err == nil && obj == nil {
			return Waiting, "waiting for " + n.Object.String() + ": " + n.What
		}
	}
	if d := first(ds, engine.MissingDependency, engine.Settling); d != nil {
		return Waiting, d.Asset.Name + ": " + d.Reason
	}
	if first(ds, engine.Included, engine.Applied, engine.Unchanged) != nil {
		return Active, ""
	}
	if d := first(ds, engine.Excluded, engine.Unmanaged); d != nil && all(ds, engine.Excluded, engine.Unmanaged, engine.Inactive) {
		return Excluded, d.Asset.Name + ": " + d.Reason
	}
	if d := first(ds, engine.Paused); d != nil {
		return Paused, d.Reason
	}
	d := ds[0]
	return NotApplicable, d.Asset.Name + ": " + d.Reason
}

func first(ds []*engine.Decision, outcomes ...engine.Outcome) *engine.Decision {
	for _, d := range ds {
		for _, o := range outcomes {
			if d.Outcome == o {
				return d
			}
		}
	}
	return nil
}

func all(ds []*engine.Decision, outcomes ...engine.Outcome) bool {
	for _, d := range ds {
		ok := false
		for _, o := range outcomes {
			ok = ok || d.Outcome == o
		}
		if !ok {
			return false
		}
	}
	return true
}
