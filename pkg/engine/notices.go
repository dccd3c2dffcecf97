package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/exclusion"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Notice is one input on the HCO that the autopilot does not act on as
// written. It is reported (an Event and a metric on the HCO, a warning on
// the CLI's stderr, /debug) and never read as "off": what it would have
// changed is left as it is.
type Notice struct {
	// Annotation is the HCO annotation (or field) concerned.
	Annotation string `json:"annotation"`
	// Reason is a bounded code, a metric label value.
	Reason InvalidReason `json:"reason"`
	// Event is the Event reason the controller records it under.
	Event   string `json:"event"`
	Message string `json:"message"`
}

// More reasons an HCO input is not acted on as written.
const (
	// UnknownName: a list entry names nothing the catalog has.
	UnknownName InvalidReason = "unknown_name"
	// MatchesNothing: a disabled-resources entry matches no object the
	// catalog renders (a typo, a kind the autopilot does not manage).
	MatchesNothing InvalidReason = "matches_nothing"
	// UnknownAnnotation: a platform.kubevirt.io/ annotation the autopilot
	// does not read (a misspelt switch is silently off otherwise).
	UnknownAnnotation InvalidReason = "unknown_annotation"
	// ShippedSwitch: a switch of the autopilot OpenShift Virtualization
	// ships that this one does not read (pkg/shipped.Switches).
	ShippedSwitch InvalidReason = "shipped_autopilot_switch"
	// HCODeploysWasp: the HCO's switch and overcommit make it deploy the
	// WASP agent beside the kubelet's swap (pkg/hcoreact).
	HCODeploysWasp InvalidReason = "hco_deploys_wasp"
)

// Notices checks every input the HCO gives the autopilot against its
// vocabulary, on the context of one walk (the effective HCO); its decisions
// say which disabled-resources entries match nothing; an entry of the kind of an
// asset whose object is unknown (its render failed) is not judged.
func (e *Evaluator) Notices(cat *catalog.Catalog, ev Evaluation) []Notice {
	rc, ds := ev.Context, ev.Decisions
	var out []Notice
	for _, err := range rc.ExclusionErrors {
		out = append(out, Notice{annotations.DisabledResources, Malformed, "InvalidDisabledResources",
			err.Error() + "; the entry is ignored, the others still apply"})
	}
	if objs, unknownKinds, ok := e.renderedIdentities(ds); ok {
		for _, r := range rc.Exclusions.Unmatched(objs) {
			if slices.ContainsFunc(unknownKinds, func(k string) bool { return strings.EqualFold(k, r.Kind) }) {
				continue
			}
			out = append(out, Notice{annotations.DisabledResources, MatchesNothing, "InvalidDisabledResources",
				fmt.Sprintf("annotation %s entry %q matches no object the autopilot renders (a typo, or a kind it does not manage): it excludes nothing",
					annotations.DisabledResources, r.String())})
		}
	}
	if act := ActivationOf(rc, cat); len(act.Unknown) > 0 {
		out = append(out, Notice{annotations.Autopilot, UnknownName, "InvalidAutopilot",
			fmt.Sprintf("annotation %s: %s name(s) no asset, group or feature and are ignored; names: see render --output status",
				annotations.Autopilot, strings.Join(act.Unknown, ", "))})
	}
	known := knownHCOAnnotations(cat)
	hcoAnn := map[string]string{}
	if u := rc.HCOObject(); u != nil {
		hcoAnn = u.GetAnnotations()
	}
	keys := make([]string, 0, len(hcoAnn))
	for k := range hcoAnn {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, annotations.SwitchPrefix) {
			continue
		}
		if instead, ok := shipped.Switches[k]; ok {
			if _, ours := known[k]; !ours {
				out = append(out, Notice{k, ShippedSwitch, "ShippedAutopilotSwitch",
					fmt.Sprintf("HCO annotation %s is a switch of the autopilot OpenShift Virtualization ships, not read here: %s", k, instead)})
				continue
			}
		}
		check, ok := known[k]
		if !ok {
			out = append(out, Notice{k, UnknownAnnotation, "UnknownAnnotation",
				fmt.Sprintf("HCO annotation %s is not one the autopilot reads (a misspelt switch?); switches: %s", k, switchList(cat))})
			continue
		}
		if check == nil {
			continue
		}
		if err := check(hcoAnn[k]); err != nil {
			switch k {
			case annotations.DisruptionWindow:
				out = append(out, Notice{k, Malformed, "InvalidDisruptionWindow", err.Error() + "; every write that reboots a pool is staged until it is fixed"})
				continue
			case annotations.YieldTo:
				// The message says what still applies (ParseYieldTo).
				out = append(out, Notice{k, Malformed, "InvalidYieldTo", err.Error()})
				continue
			}
			out = append(out, Notice{k, Malformed, "InvalidSwitch", err.Error() + "; the assets that read it are left as they are"})
		}
	}
	if hcoreact.DeploysWasp(rc.HCOObject()) {
		// Whatever this autopilot's state (paused, report-only): the HCO
		// acts on its own switch and the overcommit it holds now.
		out = append(out, Notice{annotations.Autopilot, HCODeploysWasp, "HCODeploysWasp",
			fmt.Sprintf("the HCO deploys the WASP agent, a privileged second swap stack beside the kubelet's LimitedSwap: memoryOvercommitPercentage is above 100 and HCO annotation %s is not \"true\" (nor a list naming swap-enable); set it to \"true\", or lower the overcommit to 100", annotations.Autopilot)})
	}
	if w := rc.FeatureGatesWarning(); w != "" {
		out = append(out, Notice{"spec.featureGates", Malformed, "FeatureGatesUnreadable", w})
	}
	return out
}

// knownHCOAnnotations maps every platform.kubevirt.io/ annotation the HCO
// may carry to its value check (nil: any value, or checked elsewhere).
func knownHCOAnnotations(cat *catalog.Catalog) map[string]func(string) error {
	known := map[string]func(string) error{
		annotations.Autopilot: nil, annotations.DisabledResources: nil,
		// The HCO is a managed object too: the golden config stamps it, and
		// an admin may customize or opt it out like any other.
		annotations.Asset: nil, annotations.Shared: nil, annotations.Adopted: nil,
		annotations.Patch: nil, annotations.IgnoreFields: nil, annotations.Mode: nil,
		annotations.DisruptionWindow: func(v string) error { _, err := annotations.ParseDisruptionWindow(v, true); return err },
		annotations.YieldTo:          func(v string) error { _, err := annotations.ParseYieldTo(v, true); return err },
	}
	for _, k := range shipped.Marks {
		known[k] = nil // the shipped autopilot's own marks on the HCO
	}
	for _, e := range annotations.Reference {
		if e.Check != nil && e.On == "HCO" {
			key, check := e.Key, e.Check
			known[key] = func(v string) error { return check(key, v) }
		}
	}
	boolean := func(key string) func(string) error {
		return func(v string) error { _, err := annotations.ParseBool(key, v); return err }
	}
	for _, f := range cat.Features {
		if f.Switch != "" {
			known[f.SwitchAnnotation()] = boolean(f.SwitchAnnotation())
		}
	}
	for _, a := range cat.Assets {
		for _, c := range a.Conditions {
			switch {
			case c.Type == catalog.CondAnnotation && c.Value != nil:
				if _, err := annotations.ParseBool(c.Key, *c.Value); err == nil {
					known[c.Key] = boolean(c.Key)
				} else if _, ok := known[c.Key]; !ok {
					known[c.Key] = nil
				}
			case c.Key != "":
				if _, ok := known[c.Key]; !ok {
					known[c.Key] = nil
				}
			}
		}
	}
	return known
}

func switchList(cat *catalog.Catalog) string {
	var s []string
	for _, f := range cat.Features {
		if f.Switch != "" {
			s = append(s, f.SwitchAnnotation())
		}
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// renderedIdentities lists the objects the decisions name, and the kinds
// of those whose object is unknown (render failed); ok is false when there
// are no decisions.
func (e *Evaluator) renderedIdentities(ds []Decision) (objs []exclusion.Identity, unknownKinds []string, ok bool) {
	if len(ds) == 0 {
		return nil, nil, false
	}
	for i := range ds {
		o := ds[i].Rendered
		if o == nil {
			// The catalog's component is the kind the template renders
			// (checked when the catalog's templates are tested).
			unknownKinds = append(unknownKinds, ds[i].Asset.Component)
			continue
		}
		objs = append(objs, exclusion.Identity{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return objs, unknownKinds, true
}
