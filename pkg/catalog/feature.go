package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// Maturity is a feature's support level, as Red Hat names them.
type Maturity string

// Support levels, from least to most mature.
const (
	DevPreview  Maturity = "dev-preview"
	TechPreview Maturity = "tech-preview"
	GA          Maturity = "ga"
)

// ReportSwap is a fact a feature may report: its view names the pools
// whose VM nodes do not all report swap.
const ReportSwap = "swap"

// ReportHCOReaction is a fact a feature may report: its view says whether
// the HCO deploys the WASP agent, now and for the golden config
// (pkg/hcoreact), and why memory overcommit waits.
const ReportHCOReaction = "hco-reaction"

// SwitchPrefix starts every feature switch's name; the HCO annotation is
// platform.kubevirt.io/<switch>.
const SwitchPrefix = "enable-"

// Feature is what an admin turns on or reads about: one or more assets
// (MachineConfigs per pool, an operator's objects) that only make sense
// together. Every asset belongs to exactly one feature; a feature whose
// switch only changes part of another feature's object (a setting of the
// golden HCO) names that asset in Assets.
type Feature struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Maturity    Maturity `json:"maturity"`
	// Switch, when set, is the opt-in: the HCO annotation
	// platform.kubevirt.io/<Switch>: "true". Without one the feature is
	// always on wherever its conditions hold.
	Switch string `json:"switch,omitempty"`
	// Assets are other features' assets whose templates read Switch.
	Assets []string `json:"assets,omitempty"`
	// Needs names an object a person must create before the feature does
	// anything (the fence template with BMC credentials): until it exists
	// the feature is shown waiting for it. It must be one of its assets'
	// reads, so it is watched.
	Needs *Need `json:"needs,omitempty"`
	// Reports names cluster facts the feature's view states beside its
	// state (ReportSwap: the pools whose VM nodes do not all report swap).
	Reports []string `json:"reports,omitempty"`

	// Members are the feature's assets in reconcile order: its own, then
	// Assets (filled in by Parse).
	Members []string `json:"-"`
}

// Need is an object the feature waits for, and what it is.
type Need struct {
	Object ObjectRef `json:"object"`
	What   string    `json:"what"`
}

// SwitchAnnotation is the HCO annotation of the feature's switch ("" when
// it has none).
func (f *Feature) SwitchAnnotation() string {
	if f.Switch == "" {
		return ""
	}
	return annotations.SwitchPrefix + f.Switch
}

// Feature returns the feature with the given name.
func (c *Catalog) Feature(name string) (*Feature, bool) {
	for i := range c.Features {
		if c.Features[i].Name == name {
			return &c.Features[i], true
		}
	}
	return nil, false
}

// linkFeatures validates features against the assets and fills Members.
// An asset of a feature with a switch must require the switch, so turning
// it off is a person's intent the engine can see (and act on).
func (c *Catalog) linkFeatures() []string {
	var errs []string
	byName := map[string]*Feature{}
	switches := map[string]string{}
	for i := range c.Features {
		f := &c.Features[i]
		f.Members = nil
		switch {
		case !assetName.MatchString(f.Name):
			errs = append(errs, fmt.Sprintf("feature %q: name must be lower-case alphanumerics and dashes", f.Name))
		case byName[f.Name] != nil:
			errs = append(errs, fmt.Sprintf("feature %q: duplicate name", f.Name))
		case f.Description == "":
			errs = append(errs, fmt.Sprintf("feature %q: description is required", f.Name))
		case f.Maturity != DevPreview && f.Maturity != TechPreview && f.Maturity != GA:
			errs = append(errs, fmt.Sprintf("feature %q: maturity %q: want dev-preview, tech-preview or ga", f.Name, f.Maturity))
		case f.Switch != "" && (!strings.HasPrefix(f.Switch, SwitchPrefix) || !assetName.MatchString(f.Switch)):
			errs = append(errs, fmt.Sprintf("feature %q: switch %q must be enable-<name>", f.Name, f.Switch))
		case slices.ContainsFunc(f.Reports, func(r string) bool { return r != ReportSwap && r != ReportHCOReaction }):
			errs = append(errs, fmt.Sprintf("feature %q: reports %v: want %s or %s", f.Name, f.Reports, ReportSwap, ReportHCOReaction))
		case f.Switch != "" && switches[f.Switch] != "":
			errs = append(errs, fmt.Sprintf("feature %q: switch %q is already feature %q's", f.Name, f.Switch, switches[f.Switch]))
		}
		byName[f.Name] = f
		if f.Switch != "" {
			switches[f.Switch] = f.Name
		}
	}
	for i := range c.Assets {
		a := &c.Assets[i]
		f := byName[a.Feature]
		if f == nil {
			errs = append(errs, fmt.Sprintf("asset %q: feature %q is not declared under features", a.Name, a.Feature))
			continue
		}
		f.Members = append(f.Members, a.Name)
		if f.Switch != "" && !requires(a, f.SwitchAnnotation()) {
			errs = append(errs, fmt.Sprintf("asset %q: feature %q has switch %s, so the asset needs the condition {type: annotation, key: %s, value: \"true\"} and install: opt-in",
				a.Name, f.Name, f.Switch, f.SwitchAnnotation()))
		}
	}
	for i := range c.Features {
		f := &c.Features[i]
		for _, n := range f.Assets {
			if _, ok := c.Get(n); !ok {
				errs = append(errs, fmt.Sprintf("feature %q: asset %q does not exist", f.Name, n))
			} else if !slices.Contains(f.Members, n) {
				f.Members = append(f.Members, n)
			}
		}
		if len(f.Members) == 0 {
			errs = append(errs, fmt.Sprintf("feature %q: no asset belongs to it", f.Name))
		}
		if f.Needs != nil && !readBy(c, f.Members, f.Needs.Object) {
			errs = append(errs, fmt.Sprintf("feature %q: needs %s, which none of its assets declares under reads", f.Name, f.Needs.Object))
		}
	}
	return errs
}

// requires reports whether a is opt-in on the annotation key being "true".
func requires(a *Asset, key string) bool {
	if a.Install != InstallOptIn {
		return false
	}
	for _, c := range a.Conditions {
		if c.Type == CondAnnotation && c.Key == key && c.Value != nil && *c.Value == "true" {
			return true
		}
	}
	return false
}

// readBy reports whether one of the named assets declares ref under reads.
func readBy(c *Catalog, assets []string, ref ObjectRef) bool {
	for _, n := range assets {
		if a, ok := c.Get(n); ok && slices.Contains(a.Reads, ref) {
			return true
		}
	}
	return false
}
