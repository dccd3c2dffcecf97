package rendercontext

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// Schema returns the property schema at a dot path (like "spec.profiles")
// in the storage version of the named CRD, or nil when the CRD or the field
// is absent. Reading the storage version matches what the API server keeps.
func (rc *RenderContext) Schema(crdName, path string) *apiextensionsv1.JSONSchemaProps {
	crd := rc.CRDs[crdName]
	if crd == nil {
		return nil
	}
	var root *apiextensionsv1.JSONSchemaProps
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil && (v.Storage || root == nil) {
			root = v.Schema.OpenAPIV3Schema
		}
	}
	if root == nil {
		return nil
	}
	cur := root
	for _, seg := range strings.Split(path, ".") {
		p, ok := cur.Properties[seg]
		if !ok {
			return nil
		}
		cur = &p
	}
	return cur
}

// Enum returns the allowed values at path; for a list, its items' enum.
func (rc *RenderContext) Enum(crdName, path string) []string {
	s := rc.Schema(crdName, path)
	if s == nil {
		return nil
	}
	if s.Items != nil && s.Items.Schema != nil {
		s = s.Items.Schema
	}
	out := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		// Enum values are raw JSON; string enums are quoted.
		out = append(out, strings.Trim(string(e.Raw), `"`))
	}
	return out
}

// EnumFirst returns the first candidate the enum at path allows, or "".
func (rc *RenderContext) EnumFirst(crdName, path string, candidates ...string) string {
	allowed := map[string]bool{}
	for _, e := range rc.Enum(crdName, path) {
		allowed[e] = true
	}
	for _, c := range candidates {
		if allowed[c] {
			return c
		}
	}
	return ""
}

// HasField reports whether the named CRD's schema declares the dot path.
func (rc *RenderContext) HasField(crdName, path string) bool {
	return rc.Schema(crdName, path) != nil
}

// CRDInstalled reports whether the named CRD exists (always true when the
// context assumes every kind, offline without CRD facts).
func (rc *RenderContext) CRDInstalled(name string) bool {
	if rc.AssumeAllKinds {
		return true
	}
	_, ok := rc.CRDs[name]
	return ok
}

// KindAvailable reports whether the cluster serves gvk: a CRD defines it
// with that version served, or it is a built-in kind. Built-in API groups
// never contain a dot (core, apps, batch...) or end in .k8s.io without
// being backed by a CRD.
func (rc *RenderContext) KindAvailable(gvk schema.GroupVersionKind) bool {
	if rc.AssumeAllKinds || (gvk == HCOGVK && len(rc.HCO) > 0) {
		// An HCO object proves its kind is served.
		return true
	}
	if crd := rc.CRDFor(gvk.GroupKind()); crd != nil {
		for _, v := range crd.Spec.Versions {
			if v.Name == gvk.Version && v.Served {
				return true
			}
		}
		return false
	}
	return BuiltIn(gvk)
}

// BuiltIn reports whether the API server serves gvk itself (no CRD): the
// core and "apps"-style groups and *.k8s.io. A CRD found for the kind
// takes precedence (KindAvailable).
func BuiltIn(gvk schema.GroupVersionKind) bool {
	return !strings.Contains(gvk.Group, ".") || strings.HasSuffix(gvk.Group, ".k8s.io")
}

// Structure returns how the API server merges gvk's maps and lists, read
// from its CRD (the summary in Structures when the schema was dropped,
// else the schema itself). Unknown for built-in kinds and offline.
// Decoded once per kind per context (a reconcile), not once per asset.
func (rc *RenderContext) Structure(gvk schema.GroupVersionKind) structure.Structure {
	if st, ok := rc.structures[gvk]; ok {
		return st
	}
	var st structure.Structure
	if crd := rc.CRDFor(gvk.GroupKind()); crd != nil {
		if byVersion, ok := rc.Structures[crd.Name]; ok {
			st = byVersion[gvk.Version]
		} else {
			st = structure.FromCRD(crd, gvk.Version)
		}
	}
	if rc.structures == nil {
		rc.structures = map[schema.GroupVersionKind]structure.Structure{}
	}
	rc.structures[gvk] = st
	return st
}

// CRDFor returns the CRD defining gk, if installed.
func (rc *RenderContext) CRDFor(gk schema.GroupKind) *apiextensionsv1.CustomResourceDefinition {
	for _, crd := range rc.CRDs {
		if crd.Spec.Group == gk.Group && crd.Spec.Names.Kind == gk.Kind {
			return crd
		}
	}
	return nil
}
