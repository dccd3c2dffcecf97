// Package rendercontext turns cluster facts into the RenderContext every
// template and condition reads.
//
// Building is split in two so the controller, the debug endpoints and the
// offline CLI share one code path: pkg/gather reads Facts from any
// client.Reader (the manager's cache, a live client), New is a pure
// function of Facts (which the CLI can also fill from files). A context is
// never changed once built: WithHCO and WithoutPeers return new ones.
package rendercontext

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/exclusion"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// HCO identity. The HCO is the single reconcile key.
const (
	HCOGroup   = "hco.kubevirt.io"
	HCOVersion = "v1"
	HCOKind    = "HyperConverged"
	HCOName    = "kubevirt-hyperconverged"
)

// RenderContext is everything a template may depend on.
type RenderContext struct {
	// Namespace is the HCO namespace (--namespace).
	Namespace string
	// HCO is the effective HyperConverged object, as unstructured content.
	// Empty when rendering without an HCO.
	HCO map[string]any
	// Topology and Hardware are derived from nodes and OpenShift config objects.
	Topology Topology
	// Hardware is detected on every node; HardwareFor scopes it to the
	// pools an asset configures.
	Hardware Hardware
	// nodes are the facts' nodes by class, classHW each class's hardware;
	// poolHW memoizes HardwareFor over them.
	nodes   NodeSet
	classHW []Hardware
	poolHW  *poolMemo
	// CRDs holds the installed CRDs by name, for schema-dependent rendering
	// (profile fallback, optional fields). Nil or empty offline.
	CRDs map[string]*apiextensionsv1.CustomResourceDefinition
	// Exclusions is the HCO's root exclusion list; ExclusionErrors its
	// malformed entries (ignored).
	Exclusions      exclusion.Set
	ExclusionErrors []error
	// AssumeAllKinds treats every kind and CRD as installed: an offline
	// render without CRD facts previews everything that would be active
	// (Facts.AssumeAllKinds).
	AssumeAllKinds bool
	// NamingOnly reads a switch that is not understood as off. Only for
	// naming the object of an asset already Invalid because of it (the
	// object's identity does not depend on its switches), never for a
	// decision.
	NamingOnly bool
	// Observed: the cluster objects and settings Facts gathered, as they are.
	Observed

	structures map[schema.GroupVersionKind]structure.Structure
}

// Topology are cluster shape facts.
type Topology struct {
	OpenShift            bool   `json:"openshift"`
	Platform             string `json:"platform,omitempty"`
	ControlPlaneTopology string `json:"controlPlaneTopology,omitempty"`
	SchedulableMasters   bool   `json:"schedulableMasters"`
	SingleNode           bool   `json:"singleNode"`
	Compact              bool   `json:"compact"`
	ExternalControlPlane bool   `json:"externalControlPlane"`
	Masters              int    `json:"masters"`
	Workers              int    `json:"workers"`
	Nodes                int    `json:"nodes"`
}

// Bool returns the named topology fact (catalog.TopologyFields).
func (t Topology) Bool(field string) (bool, bool) {
	switch field {
	case "openshift":
		return t.OpenShift, true
	case "schedulableMasters":
		return t.SchedulableMasters, true
	case "singleNode":
		return t.SingleNode, true
	case "compact":
		return t.Compact, true
	case "externalControlPlane":
		return t.ExternalControlPlane, true
	}
	return false, false
}

// Hardware are facts detected from node labels and capacity.
type Hardware struct {
	PCIDevices bool `json:"pciDevices"`
	NUMA       bool `json:"numa"`
	IOMMU      bool `json:"iommu"`
	USBDevices bool `json:"usbDevices"`
	GPU        bool `json:"gpu"`
	SRIOV      bool `json:"sriov"`
	// CPUVendors lists the distinct CPU vendors seen (Intel, AMD), so kernel
	// arguments can be rendered for each.
	CPUVendors []string `json:"cpuVendors,omitempty"`
}

// Detected returns the named detector's result (catalog.Detectors).
func (h Hardware) Detected(detector string) (bool, bool) {
	switch detector {
	case "pciDevices":
		return h.PCIDevices, true
	case "numa":
		return h.NUMA, true
	case "iommu":
		return h.IOMMU, true
	case "usbDevices":
		return h.USBDevices, true
	case "gpu":
		return h.GPU, true
	case "sriov":
		return h.SRIOV, true
	}
	return false, false
}

// HCOObject returns the HCO as an Unstructured (nil when there is none).
func (rc *RenderContext) HCOObject() *unstructured.Unstructured {
	if len(rc.HCO) == 0 {
		return nil
	}
	return &unstructured.Unstructured{Object: rc.HCO}
}

// HCOAnnotation returns an annotation of the HCO.
func (rc *RenderContext) HCOAnnotation(key string) (string, bool) {
	u := rc.HCOObject()
	if u == nil {
		return "", false
	}
	v, ok := u.GetAnnotations()[key]
	return v, ok
}

// FeatureGateEnabled reports whether HCO v1 spec.featureGates lists name
// with a state other than Disabled.
func (rc *RenderContext) FeatureGateEnabled(name string) bool {
	gates, _, _ := unstructured.NestedSlice(rc.HCO, "spec", "featureGates")
	for _, g := range gates {
		m, ok := g.(map[string]any)
		if !ok || m["name"] != name {
			continue
		}
		state, _ := m["state"].(string)
		return !strings.EqualFold(state, "Disabled")
	}
	return false
}

// HCOFieldUnconfigured reports whether a dot-separated HCO path is unset,
// null or an empty map or list.
func (rc *RenderContext) HCOFieldUnconfigured(path string) bool {
	v, found, err := unstructured.NestedFieldNoCopy(rc.HCO, strings.Split(path, ".")...)
	if err != nil || !found || v == nil {
		return true
	}
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return t == ""
	}
	return false
}

// Switch reads the HCO annotation platform.kubevirt.io/<name>
// (annotations.ParseSwitch): absent is off, a value that is not a boolean
// an *annotations.Invalid, never off.
func (rc *RenderContext) Switch(name string) (bool, error) {
	v, ok := rc.HCOAnnotation(annotations.SwitchPrefix + name)
	on, err := annotations.ParseSwitch(annotations.SwitchPrefix+name, v, ok)
	if err != nil && rc.NamingOnly {
		return false, nil
	}
	return on, err
}

// WithHCO returns a copy of rc with another HCO (the effective one, after
// the golden config is applied, or a fresh read before a deletion) and
// what derives from it; rc itself is left as it is.
func (rc *RenderContext) WithHCO(hco *unstructured.Unstructured) *RenderContext {
	c := *rc
	c.setHCO(hco)
	return &c
}

// WithoutPeers returns a copy of rc whose Peers leave out the objects
// gone reports (what tombstones just deleted), so an old KubeletConfig or
// NodeHealthCheck removed in this reconcile does not read as a clash.
func (rc *RenderContext) WithoutPeers(gone func(*unstructured.Unstructured) bool) *RenderContext {
	c := *rc
	c.Peers = make(map[schema.GroupVersionKind][]*unstructured.Unstructured, len(rc.Peers))
	for gvk, objs := range rc.Peers {
		kept := make([]*unstructured.Unstructured, 0, len(objs))
		for _, o := range objs {
			if !gone(o) {
				kept = append(kept, o)
			}
		}
		c.Peers[gvk] = kept
	}
	return &c
}

func (rc *RenderContext) setHCO(hco *unstructured.Unstructured) {
	rc.HCO = nil
	if hco != nil {
		rc.HCO = hco.Object
	}
	v, _ := rc.HCOAnnotation(annotations.DisabledResources)
	rc.Exclusions, rc.ExclusionErrors = annotations.ParseDisabledResources(v)
}

// HCOTerminating reports whether the HCO is being deleted (deletionTimestamp
// set): an uninstall, during which the autopilot writes and deletes nothing.
func (rc *RenderContext) HCOTerminating() bool {
	u := rc.HCOObject()
	return u != nil && u.GetDeletionTimestamp() != nil
}

// FeatureGatesWarning says when spec.featureGates is not the v1 list of
// {name, state}: hco.kubevirt.io/v1beta1 writes it as a map of booleans.
func (rc *RenderContext) FeatureGatesWarning() string {
	v, found, _ := unstructured.NestedFieldNoCopy(rc.HCO, "spec", "featureGates")
	if !found || v == nil {
		return ""
	}
	if _, ok := v.([]any); ok {
		return ""
	}
	return "HCO spec.featureGates is not a list (a map is the hco.kubevirt.io/v1beta1 form); the autopilot reads the v1 list of {name, state}, " +
		"so every feature gate counts as off (assets conditioned on one stay inactive): read and write the HCO as hco.kubevirt.io/v1"
}
