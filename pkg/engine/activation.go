package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Activation is the HCO's platform.kubevirt.io/autopilot switch: absent or
// "true" activates everything (the zero-configuration default), "false"
// pauses everything, and a comma list of asset names, groups or features activates
// only those. What is not active is left exactly as it is: never written,
// never deleted.
type Activation struct {
	// Paused: nothing is active ("false", or a list naming nothing known).
	Paused bool
	// ReportOnly: everything is evaluated and compared, nothing written
	// or deleted ("report-only").
	ReportOnly bool
	// Only lists the active assets and groups; nil means all.
	Only map[string]bool
	// Unknown lists entries that name no asset or group (reported, ignored).
	Unknown []string
	// Value is the annotation as written, for messages.
	Value string
	// Beside is the autopilot OpenShift Virtualization ships, as this
	// pass judged it (Beside): while it holds, the gate sends nothing.
	Beside shipped.Verdict
}

// ActivationOf reads the switch from the HCO; cat resolves names and groups.
func ActivationOf(rc *rendercontext.RenderContext, cat *catalog.Catalog) Activation {
	v, ok := rc.HCOAnnotation(annotations.Autopilot)
	parsed := annotations.ParseActivation(v, ok)
	a := Activation{Value: strings.TrimSpace(v), Beside: Beside(rc)}
	switch {
	case parsed.All:
		return a
	case parsed.ReportOnly:
		a.ReportOnly = true
		return a
	case parsed.Paused:
		a.Only, a.Paused = map[string]bool{}, true
		return a
	}
	a.Only = map[string]bool{}
	known := map[string]bool{}
	for _, as := range cat.Assets {
		known[as.Name] = true
		if as.Group != "" {
			known[as.Group] = true
		}
	}
	members := map[string][]string{}
	for _, f := range cat.Features {
		known[f.Name] = true
		members[f.Name] = f.Members
	}
	for _, e := range parsed.Names {
		if !known[e] {
			a.Unknown = append(a.Unknown, e)
			continue
		}
		a.Only[e] = true
		// A feature activates every asset it changes, also those it
		// borrows (higher-density's switch is in the golden HCO).
		for _, m := range members[e] {
			a.Only[m] = true
		}
	}
	// A list that names nothing known (a typo of "false", say) activates
	// nothing: failing safe means not writing.
	a.Paused = len(a.Only) == 0
	return a
}

// All reports whether every asset is active.
func (a Activation) All() bool { return !a.Paused && a.Only == nil }

// Allows reports whether asset as is active, and if not, why.
func (a Activation) Allows(as *catalog.Asset) (bool, string) {
	switch {
	case a.All():
		return true, ""
	case a.Paused:
		return false, fmt.Sprintf("paused: HCO annotation %s=%q", annotations.Autopilot, a.Value)
	case a.Only[as.Name] || (as.Group != "" && a.Only[as.Group]):
		return true, ""
	}
	return false, fmt.Sprintf("paused: not listed in HCO annotation %s=%q", annotations.Autopilot, a.Value)
}

// Beside judges the autopilot OpenShift Virtualization ships from the
// cluster as rc read it (pkg/shipped): the one judgement the activation
// report and the gate share. No context holds.
func Beside(rc *rendercontext.RenderContext) shipped.Verdict {
	if rc == nil {
		return shipped.Judge(nil, errNoContext, "", "", false)
	}
	v, ok := rc.HCOAnnotation(annotations.Autopilot)
	return shipped.Judge(rc.Shipped, rc.ShippedErr, rc.Namespace, v, ok)
}

var errNoContext = errors.New("no view of the cluster")
