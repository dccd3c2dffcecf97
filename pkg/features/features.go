// Package features turns the per-asset decisions of one evaluation into the
// admin's view of features: for each, its maturity, its switch, its state on
// this cluster with the reason, and the assets it owns with their
// disruption. The render CLI (--output features), /debug/features and the
// docs/assets.md feature table read it, so they cannot disagree.
package features

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// State is a feature's state on one cluster.
type State string

// States, in the order an admin acts on them.
const (
	// Degraded: on, but an asset failed, is invalid, throttled or in conflict.
	Degraded State = "degraded"
	// Drifted: report-only, and an asset's object differs from what the
	// autopilot would apply (nothing is written).
	Drifted State = "drifted"
	// Waiting: on, but a dependency (a CRD, an operand image) is missing,
	// or a write waits (facts settling, a busy pool, a closed disruption
	// window).
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
	// Hosted: on, on a hosted control plane's guest: its node configuration
	// goes into a NodePool on the management cluster (render --output
	// nodepool), not into the guest.
	Hosted State = "hosted"
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
	Name   string `json:"name"`
	Object string `json:"object,omitempty"`
	// Outcome is the verdict of the evaluation, or what the controller
	// last did when only a write could tell (Of's last).
	Outcome    string `json:"outcome"`
	Disruption string `json:"disruption"`
	Reason     string `json:"reason,omitempty"`
	// Deferred are fields left to their declared owners
	// (platform.kubevirt.io/yield-to), and kubelet settings left to an
	// admin's KubeletConfig.
	Deferred []engine.Deferral `json:"deferred,omitempty"`
}

// Last is what the controller last did with an asset and why; nil (the
// render CLI) or ok false when nothing was recorded.
type Last func(asset string) (o engine.Outcome, reason string, ok bool)

// member is one asset of a feature: its decision, and the outcome it
// reads as (the verdict, or a write's outcome that only a write reveals).
type member struct {
	d       *engine.Decision
	outcome string
	reason  string
}

// Of summarizes decisions (one per catalog asset, as an engine walk returns
// them, possibly narrowed) into one Status per feature, in catalog order.
// For an included asset, what only a write reveals (a rejected apply, a
// fight, a write held for settling or a busy pool) comes from last.
func Of(cat *catalog.Catalog, rc *rendercontext.RenderContext, ds []engine.Decision, last Last) []Status {
	byAsset := make(map[string]member, len(ds))
	for i := range ds {
		d := &ds[i]
		m := member{d: d, outcome: string(d.Verdict), reason: d.Reason}
		if last != nil && (d.Verdict == engine.VerdictIncluded || d.Verdict == engine.VerdictInactive) {
			// An included asset's write, or a turned-off asset's deletion,
			// that failed or waits: only the write reveals it.
			if o, why, ok := last(d.Asset.Name); ok {
				switch o {
				case engine.Failed, engine.Refused, engine.Settling, engine.Staged, engine.Drifted, engine.Invalid:
					// (Invalid: the gate holds the write for an HCO input
					// not understood.)
					m.outcome, m.reason = string(o), why
				case engine.Throttled, engine.MissingDependency, engine.Conflict:
					if d.Verdict == engine.VerdictIncluded {
						m.outcome, m.reason = string(o), why
					}
				}
			}
		}
		byAsset[d.Asset.Name] = m
	}
	out := make([]Status, 0, len(cat.Features))
	for i := range cat.Features {
		f := &cat.Features[i]
		s := Status{Name: f.Name, Description: f.Description, Maturity: f.Maturity, Switch: f.SwitchAnnotation()}
		var members []member
		for _, n := range f.Members {
			m, ok := byAsset[n]
			if !ok {
				continue
			}
			members = append(members, m)
			s.Assets = append(s.Assets, assetStatus(m))
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
	if slices.Contains(f.Reports, catalog.ReportHCOReaction) {
		notes = append(notes, hcoReaction(rc)...)
	}
	if reason != "" {
		notes = append([]string{reason}, notes...)
	}
	return strings.Join(notes, "; ")
}

// hcoReaction says what the HCO does about memory overcommit: whether
// its switch keeps the WASP agent away (then the golden config
// overcommits), and whether the HCO deploys it now.
func hcoReaction(rc *rendercontext.RenderContext) []string {
	v, set := rc.HCOAnnotation(annotations.Autopilot)
	var notes []string
	if hcoreact.SkipsWasp(v, set) {
		notes = append(notes, fmt.Sprintf("the HCO does not deploy the WASP agent (%s=%q): one swap stack, the kubelet's LimitedSwap", annotations.Autopilot, strings.TrimSpace(v)))
	} else {
		notes = append(notes, fmt.Sprintf("memory is not overcommitted: above 100%% the HCO would deploy the WASP agent, a privileged second swap stack, unless HCO annotation %s is \"true\"; set it to \"true\" to overcommit (beside the autopilot OpenShift Virtualization ships, that value also makes it act)", annotations.Autopilot))
	}
	if hcoreact.DeploysWasp(rc.HCOObject()) {
		notes = append(notes, "the HCO deploys the WASP agent now (memoryOvercommitPercentage above 100 without that switch)")
	}
	return notes
}

func assetStatus(m member) AssetStatus {
	d := m.d
	as := AssetStatus{Name: d.Asset.Name, Outcome: m.outcome, Reason: m.reason, Disruption: string(d.Asset.Disruption), Deferred: d.Deferred}
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
func state(f *catalog.Feature, rc *rendercontext.RenderContext, ds []member) (State, string) {
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
	if m, ok := first(ds, engine.Paused); ok && all(ds, engine.Paused) {
		return Paused, m.reason
	}
	if m, ok := first(ds, engine.Failed, engine.Refused, engine.Invalid, engine.Conflict, engine.Throttled); ok {
		return Degraded, m.d.Asset.Name + ": " + m.outcome + ": " + m.reason
	}
	if m, ok := first(ds, engine.Drifted); ok {
		return Drifted, m.d.Asset.Name + ": " + m.reason
	}
	if n := f.Needs; n != nil {
		if obj, err := rc.Lookup(n.Object.APIVersion, n.Object.Kind, n.Object.Namespace, n.Object.Name); err == nil && obj == nil {
			return Waiting, "waiting for " + n.Object.String() + ": " + n.What
		}
	}
	if m, ok := first(ds, engine.MissingDependency, engine.Settling, engine.Staged); ok {
		return Waiting, m.d.Asset.Name + ": " + m.reason
	}
	if m, ok := first(ds, engine.NodePool); ok {
		return Hosted, m.d.Asset.Name + ": " + m.reason
	}
	for _, m := range ds {
		if m.outcome == string(engine.VerdictIncluded) {
			return Active, ""
		}
	}
	if m, ok := first(ds, engine.Excluded, engine.Unmanaged); ok && all(ds, engine.Excluded, engine.Unmanaged, engine.Inactive) {
		return Excluded, m.d.Asset.Name + ": " + m.reason
	}
	if m, ok := first(ds, engine.Paused); ok {
		return Paused, m.reason
	}
	m := ds[0]
	return NotApplicable, m.d.Asset.Name + ": " + m.reason
}

func first(ms []member, outcomes ...engine.Outcome) (member, bool) {
	for _, m := range ms {
		for _, o := range outcomes {
			if m.outcome == string(o) {
				return m, true
			}
		}
	}
	return member{}, false
}

func all(ms []member, outcomes ...engine.Outcome) bool {
	for _, m := range ms {
		ok := false
		for _, o := range outcomes {
			ok = ok || m.outcome == string(o)
		}
		if !ok {
			return false
		}
	}
	return true
}
