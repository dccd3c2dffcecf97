package rbac

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// PolicyName names the admission policy and its binding.
const PolicyName = "virt-platform-autopilot-writes"

// mcRoleLabel is MCO's pool role label on a MachineConfig.
const mcRoleLabel = "machineconfiguration.openshift.io/role"

// Object is one object the autopilot writes beside the catalog's (its
// fleet status).
type Object struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// mcContent is what a MachineConfig of the catalog may hold: its pool
// role, and the files and units it ships.
type mcContent struct {
	role         string
	files, units []string
}

// AdmissionPolicy returns a ValidatingAdmissionPolicy and its binding
// that let serviceAccount ("system:serviceaccount:ns:name") create,
// update and delete, of every kind the catalog or the tombstones write,
// only the objects they name (and extra); its MachineConfigs only with
// the catalog's pool role, files and units. RBAC cannot scope create to
// names; admission can. A write by anyone else is not judged.
func AdmissionPolicy(fsys fs.FS, cat *catalog.Catalog, tombstones []tombstone.Tombstone, hcoNamespace, serviceAccount string, extra []Object) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	allowed := map[schema.GroupVersionResource]map[string]bool{}
	allow := func(gvk schema.GroupVersionKind, ns, name string) {
		gvr := schema.GroupVersionResource{Group: gvk.Group, Resource: Resource(gvk.Kind)}
		if allowed[gvr] == nil {
			allowed[gvr] = map[string]bool{}
		}
		allowed[gvr][ns+"/"+name] = true
	}
	mcs := map[string]mcContent{}
	kcs := map[string]map[string]any{} // KubeletConfig name -> its pool selector's matchLabels
	r := render.New(fsys)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.RenderOrHead(a.Path, &rendercontext.RenderContext{Namespace: hcoNamespace, AssumeAllKinds: true}, a.Params)
		if err != nil {
			return nil, nil, fmt.Errorf("asset %s: %w", a.Name, err)
		}
		gvk := u.GroupVersionKind()
		if gvk == rendercontext.HCOGVK {
			continue // configured, never created: RBAC has no create, and its name is the cluster's
		}
		allow(gvk, u.GetNamespace(), u.GetName())
		if gvk.Group == "machineconfiguration.openshift.io" && gvk.Kind == "MachineConfig" {
			mcs[u.GetName()] = contentOf(u)
		}
		if gvk.Group == "machineconfiguration.openshift.io" && gvk.Kind == "KubeletConfig" {
			labels, err := poolLabels(u)
			if err != nil {
				return nil, nil, fmt.Errorf("asset %s: %w", a.Name, err)
			}
			kcs[u.GetName()] = labels
		}
	}
	for _, t := range tombstones {
		allow(t.Object.GroupVersionKind(), t.Object.GetNamespace(), t.Object.GetName())
	}
	for _, o := range extra {
		allow(o.GVK, o.Namespace, o.Name)
	}

	gvrs := make([]schema.GroupVersionResource, 0, len(allowed))
	for gvr := range allowed {
		gvrs = append(gvrs, gvr)
	}
	sort.Slice(gvrs, func(i, j int) bool { return gvrs[i].Group+"/"+gvrs[i].Resource < gvrs[j].Group+"/"+gvrs[j].Resource })
	byGroup := map[string][]string{}
	var groups []string
	var entries []string
	for _, gvr := range gvrs {
		if byGroup[gvr.Group] == nil {
			groups = append(groups, gvr.Group)
		}
		byGroup[gvr.Group] = append(byGroup[gvr.Group], gvr.Resource)
		entries = append(entries, fmt.Sprintf("%s: %s", quote(gvr.Group+"/"+gvr.Resource), list(sortedKeys(allowed[gvr]))))
	}
	var rules []admissionv1.NamedRuleWithOperations
	for _, g := range groups {
		rules = append(rules, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
			Rule:       admissionv1.Rule{APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: byGroup[g]},
		}})
	}
	// Flat lists of "name|entry": CEL map literals need one value type,
	// and a MachineConfig without files would make an empty list.
	roles := []string{}
	var files, units []string
	for _, name := range sortedKeys(mcs) {
		c := mcs[name]
		roles = append(roles, quote(name)+": "+quote(c.role))
		for _, f := range c.files {
			files = append(files, name+"|"+f)
		}
		for _, u := range c.units {
			units = append(units, name+"|"+u)
		}
	}
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
			// Only the autopilot's own writes: everyone else is judged by RBAC alone.
			MatchConditions: []admissionv1.MatchCondition{{Name: "autopilot", Expression: "request.userInfo.username == " + quote(serviceAccount)}},
			Variables: []admissionv1.Variable{
				{Name: "resource", Expression: "request.resource.group + '/' + request.resource.resource"},
				// A Namespace's own admission request carries its name as
				// the namespace too; the catalog keys it as cluster-scoped.
				{Name: "key", Expression: "(variables.resource == '/namespaces' ? '' : request.?namespace.orValue('')) + '/' + request.name"},
				{Name: "allowed", Expression: "{" + strings.Join(entries, ", ") + "}"},
				{Name: "mcRoles", Expression: "{" + strings.Join(roles, ", ") + "}"},
				{Name: "mcFiles", Expression: list(files)},
				{Name: "mcUnits", Expression: list(units)},
				{Name: "kcPools", Expression: celMap(kcs)},
			},
			Validations: []admissionv1.Validation{
				{
					Expression:        "variables.resource in variables.allowed && variables.key in variables.allowed[variables.resource]",
					MessageExpression: "'the autopilot writes only the objects its catalog names: ' + variables.resource + ' ' + variables.key + ' is not one of them'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A MachineConfig keeps its pool and ships only the
					// catalog's files and units: the pod cannot reach the
					// master pool or add a unit under another name. Judged
					// on what the write changes: what another manager (a
					// person) put on the object before is not the
					// autopilot's to justify, and its server-side apply
					// keeps it.
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/machineconfigs' || " +
						"(request.name in variables.mcRoles && " +
						"(object.metadata.?labels[?'" + mcRoleLabel + "'].orValue('') == variables.mcRoles[request.name] || " +
						"(oldObject != null && object.metadata.?labels[?'" + mcRoleLabel + "'].orValue('') == oldObject.metadata.?labels[?'" + mcRoleLabel + "'].orValue(''))) && " +
						"object.spec.?config.?storage.?files.orValue([]).all(f, (request.name + '|' + string(f.path)) in variables.mcFiles || " +
						"(oldObject != null && oldObject.spec.?config.?storage.?files.orValue([]).exists(o, string(o.path) == string(f.path)))) && " +
						"object.spec.?config.?systemd.?units.orValue([]).all(u, (request.name + '|' + string(u.name)) in variables.mcUnits || " +
						"(oldObject != null && oldObject.spec.?config.?systemd.?units.orValue([]).exists(o, string(o.name) == string(u.name)))))",
					MessageExpression: "'MachineConfig ' + request.name + ': the autopilot writes a MachineConfig only for its catalog pool role, with the catalog files and units'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// What no catalog MachineConfig carries, and what would
					// take a node further than a file or a unit: another OS
					// image, kernel or extensions, FIPS, users and SSH keys,
					// links and directories, disks, RAID, filesystems, LUKS;
					// unless the object already held it as it is (another
					// manager's, kept by the apply).
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/machineconfigs' || (" +
						unchanged("osImageURL") + " && " + unchanged("baseOSExtensionsContainerImage") + " && " + unchanged("kernelType") + " && " +
						unchanged("extensions") + " && " + unchanged("fips") + " && " + unchanged("config", "passwd") + " && " +
						unchanged("config", "storage", "links") + " && " + unchanged("config", "storage", "directories") + " && " +
						unchanged("config", "storage", "disks") + " && " + unchanged("config", "storage", "raid") + " && " +
						unchanged("config", "storage", "filesystems") + " && " + unchanged("config", "storage", "luks") + ")",
					MessageExpression: "'MachineConfig ' + request.name + ': the autopilot never sets an OS image, kernel type, extensions, FIPS, users, links, directories, disks or filesystems'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A KubeletConfig selects the one pool the catalog
					// renders it for (MCO turns it into that pool's
					// MachineConfig: re-pointed, it would reach another
					// pool, the master's); nothing but the catalog's own.
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/kubeletconfigs' || " +
						"(request.name in variables.kcPools && " +
						"object.spec.?machineConfigPoolSelector.?matchExpressions.orValue([]).size() == 0 && " +
						"(object.spec.?machineConfigPoolSelector.?matchLabels.orValue({}) == variables.kcPools[request.name] || " +
						"(oldObject != null && object.spec.?machineConfigPoolSelector.?matchLabels.orValue({}) == oldObject.spec.?machineConfigPoolSelector.?matchLabels.orValue({}))))",
					MessageExpression: "'KubeletConfig ' + request.name + ': the autopilot writes a KubeletConfig only for its catalog pool'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// What no catalog kubelet setting opens: anonymous
					// requests, authorization that allows everyone, the
					// unauthenticated read-only port (kubelet
					// config/v1beta1 KubeletConfiguration: Authentication,
					// Authorization, ReadOnlyPort); unless the object held
					// it as it is already (another manager's).
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/kubeletconfigs' || (" +
						"(object.spec.?kubeletConfig.?authentication.?anonymous.?enabled.orValue(false) != true || " + unchanged("kubeletConfig", "authentication", "anonymous", "enabled") + ") && " +
						"(object.spec.?kubeletConfig.?authorization.?mode.orValue('Webhook') != 'AlwaysAllow' || " + unchanged("kubeletConfig", "authorization", "mode") + ") && " +
						"(object.spec.?kubeletConfig.?readOnlyPort.orValue(0) == 0 || " + unchanged("kubeletConfig", "readOnlyPort") + "))",
					MessageExpression: "'KubeletConfig ' + request.name + ': the autopilot never allows anonymous kubelet requests, AlwaysAllow authorization or the read-only port'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding, nil
}

// contentOf reads a rendered MachineConfig's role, file paths and unit names.
func contentOf(u *unstructured.Unstructured) mcContent {
	c := mcContent{role: u.GetLabels()[mcRoleLabel], files: []string{}, units: []string{}}
	files, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "storage", "files")
	for _, f := range files {
		if m, ok := f.(map[string]any); ok {
			if p, ok := m["path"].(string); ok {
				c.files = append(c.files, p)
			}
		}
	}
	units, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "systemd", "units")
	for _, x := range units {
		if m, ok := x.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				c.units = append(c.units, n)
			}
		}
	}
	sort.Strings(c.files)
	sort.Strings(c.units)
	return c
}

// poolLabels is a rendered KubeletConfig's pool selector: matchLabels
// only (the policy compares it whole).
func poolLabels(u *unstructured.Unstructured) (map[string]any, error) {
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "machineConfigPoolSelector", "matchExpressions"); found {
		return nil, fmt.Errorf("KubeletConfig %s: a pool selector with matchExpressions cannot be bounded by the admission policy", u.GetName())
	}
	labels, found, err := unstructured.NestedMap(u.Object, "spec", "machineConfigPoolSelector", "matchLabels")
	if err != nil || !found || len(labels) == 0 {
		return nil, fmt.Errorf("KubeletConfig %s: no pool selector's matchLabels as rendered", u.GetName())
	}
	return labels, nil
}

// celMap is a CEL literal of a map from name to a map of strings (JSON's
// syntax for objects and strings is CEL's).
func celMap(m map[string]map[string]any) string {
	var entries []string
	for _, name := range sortedKeys(m) {
		var inner []string
		for _, k := range sortedKeys(m[name]) {
			inner = append(inner, quote(k)+": "+quote(fmt.Sprint(m[name][k])))
		}
		entries = append(entries, quote(name)+": {"+strings.Join(inner, ", ")+"}")
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// quote is a CEL string literal (Go's quoting is a subset of CEL's).
func quote(s string) string { return strconv.Quote(s) }

func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func ptrReason(r metav1.StatusReason) *metav1.StatusReason { return &r }

// unchanged is CEL saying the MachineConfig field at spec.<path> is absent,
// or was already there with the same value before this write.
func unchanged(path ...string) string {
	opt := "object.spec.?" + strings.Join(path, ".?")
	oldOpt := "oldObject.spec.?" + strings.Join(path, ".?")
	return "(!" + opt + ".hasValue() || (oldObject != null && " + oldOpt + ".hasValue() && object.spec." + strings.Join(path, ".") + " == oldObject.spec." + strings.Join(path, ".") + "))"
}
