// Package rbac derives the autopilot's least-privilege ClusterRole from the
// catalog and the tombstones, so permissions follow what ships.
package rbac

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// irregular maps kinds whose resource name is not lower-case kind + "s".
// The conformance test checks every managed kind against a real API
// server's REST mapping, so a missing entry fails CI, not a cluster.
var irregular = map[string]string{"SecurityContextConstraints": "securitycontextconstraints"}

// Resource returns the plural resource name of kind.
func Resource(kind string) string {
	if r, ok := irregular[kind]; ok {
		return r
	}
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"):
		return k + "es" // StorageClass: storageclasses
	case strings.HasSuffix(k, "y") && !strings.ContainsAny(k[len(k)-2:len(k)-1], "aeiou"):
		return k[:len(k)-1] + "ies" // NetworkPolicy: networkpolicies
	}
	return k + "s"
}

// static are the reads every reconcile needs and the writes for reporting.
var static = []rbacv1.PolicyRule{
	{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures", "schedulers"}, Verbs: []string{"get", "list", "watch"}},
	// Pool labels: another KubeletConfig selecting a pool the autopilot configures clashes.
	{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	// Secure metrics: each scrape's token and permission are checked.
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// Rules returns the ClusterRole rules: per managed kind get/list/watch/patch,
// create unless it is the HCO (the autopilot configures an HCO, it never
// creates one), delete only for kinds with tombstones or opt-in assets.
func Rules(fsys fs.FS, cat *catalog.Catalog, tombstones []tombstone.Tombstone) ([]rbacv1.PolicyRule, error) {
	verbs := map[schema.GroupKind]map[string]bool{}
	add := func(gk schema.GroupKind, vs ...string) {
		if verbs[gk] == nil {
			verbs[gk] = map[string]bool{}
		}
		for _, v := range vs {
			verbs[gk][v] = true
		}
	}
	r := render.New(fsys)
	bind := map[string][]string{}     // roles resource -> role names
	escalate := map[string][]string{} // the same, for roles it writes
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.Render(a.Path, &rendercontext.RenderContext{Namespace: "openshift-cnv", AssumeAllKinds: true}, a.Params, nil)
		if err != nil {
			return nil, fmt.Errorf("asset %s: %w", a.Name, err)
		}
		gk := u.GroupVersionKind().GroupKind()
		if gk.Group == "rbac.authorization.k8s.io" && (gk.Kind == "ClusterRoleBinding" || gk.Kind == "RoleBinding") {
			// Binding a role the autopilot does not hold needs bind on that
			// role, and on exactly those roles.
			ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
			kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
			if ref == "" || kind == "" {
				return nil, fmt.Errorf("asset %s: a binding without roleRef", a.Name)
			}
			bind[Resource(kind)] = append(bind[Resource(kind)], ref)
		}
		if gk.Group == "rbac.authorization.k8s.io" && (gk.Kind == "ClusterRole" || gk.Kind == "Role") {
			// Writing a role that grants what the autopilot does not hold
			// needs escalate, on exactly the roles it ships.
			escalate[Resource(gk.Kind)] = append(escalate[Resource(gk.Kind)], u.GetName())
		}
		add(gk, "get", "list", "watch", "patch")
		if gk != rendercontext.HCOGVK.GroupKind() {
			add(gk, "create")
		}
		if a.OptIn() && !a.Shared {
			add(gk, "delete")
		}
		for _, rd := range a.Reads {
			gv, err := schema.ParseGroupVersion(rd.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("asset %s: reads %s: %w", a.Name, rd, err)
			}
			add(gv.WithKind(rd.Kind).GroupKind(), "get", "list", "watch")
		}
	}
	// StorageProfiles are a fact (a class's access modes), read whole.
	add(rendercontext.StorageProfileGVK.GroupKind(), "get", "list", "watch")
	add(rendercontext.StorageClassGVK.GroupKind(), "get", "list", "watch")
	for _, t := range tombstones {
		gk := t.Object.GroupVersionKind().GroupKind()
		add(gk, "get", "list", "watch", "delete")
	}
	gks := make([]schema.GroupKind, 0, len(verbs))
	for gk := range verbs {
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool {
		if gks[i].Group != gks[j].Group {
			return gks[i].Group < gks[j].Group
		}
		return gks[i].Kind < gks[j].Kind
	})
	rules := append([]rbacv1.PolicyRule{}, static...)
	for _, gk := range gks {
		vs := make([]string, 0, len(verbs[gk]))
		for v := range verbs[gk] {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{gk.Group}, Resources: []string{Resource(gk.Kind)}, Verbs: vs})
	}
	for _, res := range []string{"clusterroles", "roles"} {
		for _, v := range []struct {
			verb  string
			names []string
		}{{"bind", bind[res]}, {"escalate", escalate[res]}} {
			if len(v.names) > 0 {
				sort.Strings(v.names)
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{res}, Verbs: []string{v.verb}, ResourceNames: slices.Compact(v.names)})
			}
		}
	}
	return rules, nil
}
