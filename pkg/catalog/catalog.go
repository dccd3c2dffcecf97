// Package catalog loads and validates the asset catalog (assets/metadata.yaml).
//
// The catalog is the single description of what the autopilot manages: the
// controller, the render CLI, the RBAC generator and the docs all read it.
// Loading is strict: an unknown field or a malformed condition is a build-time
// bug, so it fails with a message naming the asset and the problem.
package catalog

import (
	"bytes"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Install says when an asset is active.
type Install string

const (
	// InstallAlways assets are active whenever their conditions (if any) hold.
	InstallAlways Install = "always"
	// InstallOptIn assets are active only when their conditions hold, and
	// what they created is removed when they stop holding.
	InstallOptIn Install = "opt-in"
)

// Asset is one catalog entry: an embedded template rendering exactly one object.
type Asset struct {
	Name           string  `json:"name"`
	Path           string  `json:"path"`
	Component      string  `json:"component"`
	ReconcileOrder int     `json:"reconcile_order"`
	Install        Install `json:"install"`
	Description    string  `json:"description,omitempty"`
	// Tier: 1 always-on baseline, 2 context-aware opt-in, 3 advanced.
	Tier    int    `json:"tier"`
	Group   string `json:"group,omitempty"`
	GateCRD string `json:"gate_crd,omitempty"`
	// Exclusive declares that a second object of the asset's kind for the
	// same scope silently wins or is refused, and how the scope is computed
	// (ExclusiveScopes). The autopilot then never applies its object over a
	// foreign one holding part of that scope: outcome Conflict.
	Exclusive  string      `json:"exclusive,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	// Params are passed to the template as .Params, so one template can serve
	// several assets (for example one MachineConfig per pool role).
	Params map[string]string `json:"params,omitempty"`
	// Disruption is what applying the object does to nodes.
	Disruption Disruption `json:"disruption"`
	// Sources cite the upstream code an asset's settings were decided from
	// (repository path: fact); docs/assets.md lists them.
	Sources []string `json:"sources,omitempty"`
	// Feature is the feature the asset belongs to (see Feature).
	Feature string `json:"feature"`
	// Shared marks an object that is not the autopilot's alone (a config
	// another operator reads, which an admin may have written first): the
	// template merges into what is there, and the object is never deleted.
	Shared bool `json:"shared,omitempty"`
	// Reads are objects the template reads with lookup; the controller
	// watches exactly these (not their whole kind) so reading them costs no
	// request in steady state.
	Reads []ObjectRef `json:"reads,omitempty"`
	// Replaces names the asset whose object carried the same settings in
	// an earlier form (a pool's KubeletConfig before its kubelet read the
	// drop-in folder). When this asset is active and that one is not, the
	// other's object is deleted together with this asset's write: one
	// write, judged once by the gate, so the pool rolls once.
	Replaces string `json:"replaces,omitempty"`
}

// KubeletUnitRead is the MachineConfig MCO renders a pool role's
// kubelet.service into (templates/<role>/01-<role>-kubelet), which a
// kubelet-config-dir condition reads.
func KubeletUnitRead(role string) ObjectRef {
	return ObjectRef{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig", Name: "01-" + role + "-kubelet"}
}

// Role is the pool role an asset configures (Params pool, else role).
func (a *Asset) Role() string {
	if p := a.Params["pool"]; p != "" {
		return p
	}
	return a.Params["role"]
}

// ObjectRef names one object a template reads.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Disruption says what a write of an asset's object does to running nodes.
type Disruption string

const (
	// DisruptionNone means nodes keep running; operators reconcile their operands.
	DisruptionNone Disruption = "none"
	// DisruptionReboot means the Machine Config Operator renders a new pool
	// configuration and drains and reboots the pool's nodes, maxUnavailable
	// at a time (one by default).
	DisruptionReboot Disruption = "reboot"
)

// RebootKinds are the kinds the Machine Config Operator turns into node
// configuration: writing one rolls a pool (a change with no node disruption
// policy reboots: machine-config-operator docs/NodeDisruptionPolicy.md).
var RebootKinds = map[string]bool{"MachineConfig": true, "KubeletConfig": true, "ContainerRuntimeConfig": true}

// ContainerKinds are kinds whose deletion deletes everything they hold,
// whoever put it there: the autopilot never deletes one (engine.Cascades),
// so its role never grants deleting one.
var ContainerKinds = map[string]bool{"Namespace": true}

// ExclusivePool is one object per MachineConfigPool, its scope the pools its
// spec.machineConfigPoolSelector selects, as MCO reads that selector
// (absent, empty or not valid selects no pool: rendercontext.MCOSelects).
// MCO renders each KubeletConfig of a pool into a whole kubelet.conf in its
// own MachineConfig, and the last in name order replaces the others'.
const ExclusivePool = "pool"

// ExclusiveNodes is one object per node, its scope the nodes its
// spec.selector selects, as NodeHealthCheck reads it (empty or absent
// selects every node): NHC requires that checks do not overlap, and on a
// node two checks select the first to create the remediation wins, the
// other's settings (fencing, timeouts, minHealthy) silently never apply.
const ExclusiveNodes = "nodes"

// ExclusiveScopes are the scopes an asset may declare, each with the one
// kind whose vendor defines it.
var ExclusiveScopes = map[string]string{ExclusivePool: "KubeletConfig", ExclusiveNodes: "NodeHealthCheck"}

// OptIn reports whether the asset's objects are removed when it becomes inactive.
func (a *Asset) OptIn() bool { return a.Install == InstallOptIn }

// Catalog is the validated, ordered list of assets and the features they
// make up.
type Catalog struct {
	Features []Feature `json:"features"`
	Assets   []Asset   `json:"assets"`
}

// Get returns the asset with the given name.
func (c *Catalog) Get(name string) (*Asset, bool) {
	for i := range c.Assets {
		if c.Assets[i].Name == name {
			return &c.Assets[i], true
		}
	}
	return nil, false
}

var assetName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// Load reads and validates the catalog file at path inside fsys. Assets are
// returned sorted by reconcile_order, ties broken by name so the order is stable.
func Load(fsys fs.FS, path string) (*Catalog, error) {
	raw, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	if c, ok := loadCompiled(fsys, path, raw); ok {
		return c.finish(fsys)
	}
	return Parse(fsys, raw)
}

// Parse parses and validates the catalog YAML raw; fsys holds the
// templates it names (nil skips checking them).
func Parse(fsys fs.FS, raw []byte) (*Catalog, error) {
	c, err := decodeYAML(raw)
	if err != nil {
		return nil, err
	}
	return c.finish(fsys)
}

func decodeYAML(raw []byte) (*Catalog, error) {
	var c Catalog
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(raw), &c); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return &c, nil
}

// finish validates c and sorts its assets into reconcile order.
func (c *Catalog) finish(fsys fs.FS) (*Catalog, error) {
	if len(c.Assets) == 0 {
		return nil, fmt.Errorf("catalog: no assets")
	}
	seen := map[string]bool{}
	var errs []string
	for i := range c.Assets {
		a := &c.Assets[i]
		if err := validate(fsys, a); err != nil {
			errs = append(errs, fmt.Sprintf("asset %d (%q): %v", i, a.Name, err))
			continue
		}
		if seen[a.Name] {
			errs = append(errs, fmt.Sprintf("asset %q: duplicate name", a.Name))
		}
		seen[a.Name] = true
	}
	errs = append(errs, c.linkFeatures()...)
	errs = append(errs, c.checkReplaces()...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("catalog is invalid:\n  %s", strings.Join(errs, "\n  "))
	}
	sort.SliceStable(c.Assets, func(i, j int) bool {
		if c.Assets[i].ReconcileOrder != c.Assets[j].ReconcileOrder {
			return c.Assets[i].ReconcileOrder < c.Assets[j].ReconcileOrder
		}
		return c.Assets[i].Name < c.Assets[j].Name
	})
	return c, nil
}

// checkReplaces: a replaced asset exists, configures the same pool role
// in the same feature, and is replaced by one asset only, which nothing
// replaces in turn (a chain would delete what the middle one writes).
func (c *Catalog) checkReplaces() []string {
	var errs []string
	by := map[string]string{}
	for i := range c.Assets {
		a := &c.Assets[i]
		if a.Replaces == "" {
			continue
		}
		old, ok := c.Get(a.Replaces)
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("asset %q: replaces %q, which is not in the catalog", a.Name, a.Replaces))
		case old.Feature != a.Feature || old.Role() != a.Role() || old.Role() == "":
			errs = append(errs, fmt.Sprintf("asset %q: replaces %q, which configures another feature or pool role", a.Name, a.Replaces))
		case old.Replaces != "":
			errs = append(errs, fmt.Sprintf("asset %q: replaces %q, which replaces %q in turn", a.Name, a.Replaces, old.Replaces))
		case by[a.Replaces] != "":
			errs = append(errs, fmt.Sprintf("asset %q: %q is already replaced by %q", a.Name, a.Replaces, by[a.Replaces]))
		}
		by[a.Replaces] = a.Name
	}
	return errs
}

func validate(fsys fs.FS, a *Asset) error {
	if !assetName.MatchString(a.Name) {
		return fmt.Errorf("name must be lower-case alphanumerics and dashes")
	}
	if a.Path == "" {
		return fmt.Errorf("path is required")
	}
	if fsys != nil {
		if _, err := fs.Stat(fsys, a.Path); err != nil {
			return fmt.Errorf("path %q: %w", a.Path, err)
		}
	}
	if a.Component == "" {
		return fmt.Errorf("component (the Kind the template renders) is required")
	}
	if a.Tier < 1 || a.Tier > 3 {
		return fmt.Errorf("tier must be 1 (always-on), 2 (context-aware) or 3 (advanced)")
	}
	if a.ReconcileOrder < 0 {
		return fmt.Errorf("reconcile_order must be >= 0")
	}
	switch a.Install {
	case InstallAlways, InstallOptIn:
	case "":
		return fmt.Errorf("install is required (always or opt-in)")
	default:
		return fmt.Errorf("install %q: must be always or opt-in", a.Install)
	}
	for _, r := range a.Reads {
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" {
			return fmt.Errorf("reads %q: needs apiVersion, kind and name", r.String())
		}
	}
	if a.Exclusive != "" {
		kind, ok := ExclusiveScopes[a.Exclusive]
		switch {
		case !ok:
			return fmt.Errorf("exclusive %q: must be %s or %s", a.Exclusive, ExclusivePool, ExclusiveNodes)
		case kind != a.Component:
			return fmt.Errorf("exclusive %q is the scope of a %s, not of a %s", a.Exclusive, kind, a.Component)
		}
	}
	if a.Install == InstallOptIn && len(a.Conditions) == 0 {
		return fmt.Errorf("an opt-in asset needs at least one condition, or it could never turn on")
	}
	for j := range a.Conditions {
		if err := a.Conditions[j].validate(); err != nil {
			return fmt.Errorf("condition %d: %w", j, err)
		}
		if c := a.Conditions[j]; c.Type == CondCRDField && c.Name != a.GateCRD {
			// Only a gate CRD's schema is kept in the cache.
			return fmt.Errorf("condition %d: crd-field reads %s, which must be the asset's gate_crd (%q)", j, c.Name, a.GateCRD)
		}
		if c := a.Conditions[j]; c.Type == CondKubeletConfigDir {
			want := KubeletUnitRead(a.Role())
			if a.Role() == "" || !slices.Contains(a.Reads, want) {
				return fmt.Errorf("condition %d: kubelet-config-dir needs params pool or role and reads %s (apiVersion %s)", j, want, want.APIVersion)
			}
		}
	}
	want := DisruptionNone
	if RebootKinds[a.Component] {
		want = DisruptionReboot
	}
	if a.Disruption != want {
		return fmt.Errorf("disruption %q: a %s write means %q (MachineConfig and KubeletConfig reboot their pool, other kinds none)", a.Disruption, a.Component, want)
	}
	if a.Feature == "" {
		return fmt.Errorf("feature is required (every asset belongs to one feature)")
	}
	return nil
}
