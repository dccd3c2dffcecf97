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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
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
	// apiservers: the cluster's TLS profile, served by the metrics endpoint.
	{APIGroups: []string{"config.openshift.io"}, Resources: []string{"apiservers", "infrastructures", "schedulers"}, Verbs: []string{"get", "list", "watch"}},
	// Pool labels: another KubeletConfig selecting a pool the autopilot configures clashes.
	{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	// The VMs a pending rollout moves (pkg/impact): listed when a write
	// that reboots a pool is sent or waits, never watched.
	{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachineinstances"}, Verbs: []string{"list"}},
	// Secure metrics: each scrape's token and permission are checked.
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	// Whether the admission policy bounding its own writes is in place
	// (pkg/admission): read and watched by name.
	{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: []string{"get", "list", "watch"}},
	// Whether the autopilot OpenShift Virtualization ships runs beside it
	// (pkg/shipped): its Deployment, read and watched by name only (a
	// list or watch narrowed to metadata.name is authorized by name).
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{shipped.DeploymentName}, Verbs: []string{"get", "list", "watch"}},
}

// Rules returns the ClusterRole rules, least privilege:
//   - per managed kind get/list/watch (the label-filtered cache) and create
//     unless it is the HCO (the autopilot configures an HCO, never creates
//     one): verbs that cannot be scoped to names;
//   - patch, and delete for opt-in assets and assets another replaces
//     (catalog Replaces) that are not shared and not a container
//     (catalog.ContainerKinds: never deleted) and for tombstones, only on
//     the names the catalog renders;
//   - the rules of every role the catalog ships, held by the autopilot
//     itself, so it can write and bind those roles without escalate (which,
//     with bind, would let it grant itself anything);
//   - bind only on roles it references but does not ship (an operator's);
//   - get/list/watch for declared reads and facts.
func Rules(fsys fs.FS, cat *catalog.Catalog, tombstones []tombstone.Tombstone) ([]rbacv1.PolicyRule, error) {
	replaced := map[string]bool{} // assets whose object another's write deletes
	for _, a := range cat.Assets {
		if a.Replaces != "" {
			replaced[a.Replaces] = true
		}
	}
	open := map[schema.GroupKind]map[string]bool{}      // unscoped verbs
	named := map[schema.GroupKind]map[string][]string{} // verb -> names
	add := func(gk schema.GroupKind, vs ...string) {
		if open[gk] == nil {
			open[gk] = map[string]bool{}
		}
		for _, v := range vs {
			open[gk][v] = true
		}
	}
	addNamed := func(gk schema.GroupKind, name string, vs ...string) {
		if named[gk] == nil {
			named[gk] = map[string][]string{}
		}
		for _, v := range vs {
			named[gk][v] = append(named[gk][v], name)
		}
	}
	r := render.New(fsys)
	shipped := map[string]bool{} // "clusterroles/name", "roles/name"
	var bindRefs [][2]string     // resource, name
	var held []rbacv1.PolicyRule // the shipped roles' rules
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.RenderOrHead(a.Path, &rendercontext.RenderContext{Namespace: "openshift-cnv", AssumeAllKinds: true}, a.Params)
		if err != nil {
			return nil, fmt.Errorf("asset %s: %w", a.Name, err)
		}
		gk := u.GroupVersionKind().GroupKind()
		if gk.Group == "rbac.authorization.k8s.io" {
			switch gk.Kind {
			case "ClusterRoleBinding", "RoleBinding":
				ref, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
				kind, _, _ := unstructured.NestedString(u.Object, "roleRef", "kind")
				if ref == "" || kind == "" {
					return nil, fmt.Errorf("asset %s: a binding without roleRef", a.Name)
				}
				bindRefs = append(bindRefs, [2]string{Resource(kind), ref})
			case "ClusterRole", "Role":
				shipped[Resource(gk.Kind)+"/"+u.GetName()] = true
				var role rbacv1.ClusterRole
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
					return nil, fmt.Errorf("asset %s: %w", a.Name, err)
				}
				held = append(held, role.Rules...)
			}
		}
		add(gk, "get", "list", "watch")
		if gk != rendercontext.HCOGVK.GroupKind() {
			add(gk, "create")
		}
		addNamed(gk, u.GetName(), "patch")
		if (a.OptIn() || replaced[a.Name]) && !a.Shared && !catalog.ContainerKinds[gk.Kind] {
			addNamed(gk, u.GetName(), "delete")
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
		add(gk, "get", "list", "watch")
		addNamed(gk, t.Object.GetName(), "delete")
	}
	gks := make([]schema.GroupKind, 0, len(open))
	for gk := range open {
		gks = append(gks, gk)
	}
	for gk := range named {
		if open[gk] == nil {
			gks = append(gks, gk)
		}
	}
	sort.Slice(gks, func(i, j int) bool {
		if gks[i].Group != gks[j].Group {
			return gks[i].Group < gks[j].Group
		}
		return gks[i].Kind < gks[j].Kind
	})
	rules := append([]rbacv1.PolicyRule{}, static...)
	for _, gk := range gks {
		res := []string{Resource(gk.Kind)}
		if vs := sortedKeys(open[gk]); len(vs) > 0 {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{gk.Group}, Resources: res, Verbs: vs})
		}
		for _, v := range sortedKeys(named[gk]) {
			names := append([]string(nil), named[gk][v]...)
			sort.Strings(names)
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{gk.Group}, Resources: res, Verbs: []string{v}, ResourceNames: slices.Compact(names)})
		}
	}
	bind := map[string][]string{}
	for _, b := range bindRefs {
		if !shipped[b[0]+"/"+b[1]] {
			bind[b[0]] = append(bind[b[0]], b[1])
		}
	}
	for _, res := range []string{"clusterroles", "roles"} {
		if names := bind[res]; len(names) > 0 {
			sort.Strings(names)
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{res}, Verbs: []string{"bind"}, ResourceNames: slices.Compact(names)})
		}
	}
	return append(rules, held...), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
