// Package redact keeps credentials in the cluster: every output that
// leaves it (facts files, render outputs and the diff, the debug
// endpoints) passes its objects through Object first. Credentials are
// found by field, from what each vendor documents as one, not only by
// kind: a Secret is the obvious door, a fence agent's password in a CR's
// spec or a URL's userinfo are the others.
package redact

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Mark replaces every redacted value.
const Mark = "REDACTED"

// rule redacts the fields of one kind that hold credentials.
type rule struct {
	group, kind string
	// maps are the paths of string maps whose values are all redacted;
	// nested maps under them (a value per node) are redacted whole.
	maps [][]string
	why  string
}

// rules are the vendor-documented credential fields of the kinds the
// autopilot reads. Free-form parameter maps are redacted whole: their
// keys are the vendor's agent's or provisioner's own vocabulary, so a
// list of credential names would miss the next one.
var rules = []rule{
	{group: "", kind: "Secret", maps: [][]string{{"data"}, {"stringData"}},
		why: "k8s.io/api core/v1 types.go (Secret): data and stringData are the secret"},
	{group: "fence-agents-remediation.medik8s.io", kind: "FenceAgentsRemediationTemplate",
		maps: [][]string{{"spec", "template", "spec", "sharedparameters"}, {"spec", "template", "spec", "nodeparameters"}},
		why:  "medik8s/fence-agents-remediation api/v1alpha1/fenceagentsremediation_types.go (SharedParameters, NodeParameters) and README: the agent's parameters, --password among them, are passed as given"},
	{group: "fence-agents-remediation.medik8s.io", kind: "FenceAgentsRemediation",
		maps: [][]string{{"spec", "sharedparameters"}, {"spec", "nodeparameters"}},
		why:  "medik8s/fence-agents-remediation api/v1alpha1/fenceagentsremediation_types.go: the template's parameters, copied into each remediation"},
	{group: "storage.k8s.io", kind: "StorageClass", maps: [][]string{{"parameters"}},
		why: "k8s.io/api storage/v1 types.go (StorageClass.Parameters): opaque to Kubernetes; in-tree and CSI provisioners have taken passwords there (glusterfs restuserkey)"},
}

// Object returns u with every credential it holds replaced by Mark: a
// copy when anything was redacted, u itself otherwise (nil stays nil).
// What stays is everything a render reads.
func Object(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	c := u.DeepCopy()
	changed := false
	// kubectl apply keeps the whole object as applied, credentials
	// included (k8s.io/api core/v1 annotation_key_constants.go,
	// LastAppliedConfigAnnotation).
	if ann := c.GetAnnotations(); ann != nil {
		if _, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
			ann[corev1.LastAppliedConfigAnnotation] = Mark
			c.SetAnnotations(ann)
			changed = true
		}
	}
	gvk := c.GroupVersionKind()
	for _, r := range rules {
		if r.group != gvk.Group || r.kind != gvk.Kind {
			continue
		}
		for _, path := range r.maps {
			if m, ok, _ := unstructured.NestedFieldNoCopy(c.Object, path...); ok {
				if mm, ok := m.(map[string]any); ok {
					for k := range mm {
						mm[k] = Mark
						changed = true
					}
				}
			}
		}
	}
	// A URL's password, wherever a string holds one (an output's
	// endpoint, a registry): RFC 3986 userinfo.
	if walkStrings(c.Object, userinfo) {
		changed = true
	}
	if !changed {
		return u
	}
	return c
}

// urlPassword finds the password of a URL's userinfo (RFC 3986) anywhere
// in a string: a value of its own, a flag (--url=https://u:p@h), a line
// of an embedded configuration.
var urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)([^\s/?#@]+)@`)

// userinfo redacts every URL password in s.
func userinfo(s string) (string, bool) {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s, false
	}
	out := urlPassword.ReplaceAllString(s, "${1}"+Mark+"@")
	return out, out != s
}

// walkStrings replaces every string in v for which f reports a change.
func walkStrings(v any, f func(string) (string, bool)) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok {
				if n, ok := f(s); ok {
					t[k], changed = n, true
				}
				continue
			}
			changed = walkStrings(e, f) || changed
		}
	case []any:
		for i, e := range t {
			if s, ok := e.(string); ok {
				if n, ok := f(s); ok {
					t[i], changed = n, true
				}
				continue
			}
			changed = walkStrings(e, f) || changed
		}
	}
	return changed
}
