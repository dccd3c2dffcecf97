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

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// TrustedImages names the policy's variable listing the images a catalog
// workload may run ("<key>|<image>"), the admin's to choose.
const TrustedImages = "images"

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

// schedulerGVK is OpenShift's cluster Scheduler: spec.mastersSchedulable
// says whether masters run workloads (VMs). Only administrators write it;
// the policy reads it as its parameter, which the autopilot's token cannot
// forge.
var schedulerGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"}

// AdmissionPolicy returns a ValidatingAdmissionPolicy and its binding
// that let serviceAccount ("system:serviceaccount:ns:name") create,
// update and delete, of every kind the catalog or the tombstones write,
// only the objects they name (and extra), and only with the content the
// catalog renders for them: MachineConfigs with their pool role, kernel
// arguments, files and units; KubeletConfigs for their pool, never
// opening the kubelet; roles, bindings and SCCs exactly; workloads with
// the catalog's pod and containers, running only images (operand image
// name -> references the admin trusts; none: no catalog workload). Objects
// the catalog renders only where masters are (or are not) schedulable
// follow the cluster's Scheduler. RBAC cannot scope create to names;
// admission can. A write by anyone else is not judged.
func AdmissionPolicy(fsys fs.FS, cat *catalog.Catalog, tombstones []tombstone.Tombstone, hcoNamespace, serviceAccount string, extra []Object, images map[string][]string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	allowed := map[schema.GroupVersionResource]map[string]bool{}
	allow := func(gvk schema.GroupVersionKind, ns, name string) {
		gvr := schema.GroupVersionResource{Group: gvk.Group, Resource: Resource(gvk.Kind)}
		if allowed[gvr] == nil {
			allowed[gvr] = map[string]bool{}
		}
		allowed[gvr][ns+"/"+name] = true
	}
	// The policy's key of an object: "group/resource|namespace/name".
	keyOf := func(u *unstructured.Unstructured) string {
		gvk := u.GroupVersionKind()
		return gvk.Group + "/" + Resource(gvk.Kind) + "|" + u.GetNamespace() + "/" + u.GetName()
	}
	mcs := map[string]*mcBounds{}
	kcs := map[string]map[string]any{} // KubeletConfig name -> its pool selector's matchLabels
	kcPairs := map[string]bool{}       // CEL literals {kc, at, key, value} of every rendered setting
	// key -> the rendered labels and annotations of what the policy
	// bounds by content (a role's labels aggregate it; an annotation on a
	// MachineConfig or KubeletConfig steers MCO)
	metaLabels, metaAnnotations := map[string]any{}, map[string]any{}
	schedulable := map[string]bool{} // key -> the mastersSchedulable its asset needs
	var pinned, containers []pinnedEntry
	var trusted []string // "key|image"
	r := render.New(fsys)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		renders, err := reach(r, a, hcoNamespace)
		if err != nil {
			return nil, nil, err
		}
		u := renders[0]
		gvk := u.GroupVersionKind()
		allow(gvk, u.GetNamespace(), u.GetName())
		if gvk == rendercontext.HCOGVK {
			continue // configured, never created (RBAC has no create): judged by its metadata below
		}
		for _, c := range a.Conditions {
			if c.Type == catalog.CondTopology && c.Field == "schedulableMasters" {
				schedulable[keyOf(u)] = c.Want() == "true"
			}
		}
		if gvk.Group == "machineconfiguration.openshift.io" && gvk.Kind == "MachineConfig" {
			b := mcs[u.GetName()]
			if b == nil {
				b = newMCBounds()
				mcs[u.GetName()] = b
			}
			for _, o := range renders {
				b.add(o)
			}
		}
		if gvk.Group == "machineconfiguration.openshift.io" && gvk.Kind == "KubeletConfig" {
			for _, o := range renders {
				for _, p := range kcSettings(o) {
					kcPairs[p] = true
				}
			}
			labels, err := poolLabels(u)
			if err != nil {
				return nil, nil, fmt.Errorf("asset %s: %w", a.Name, err)
			}
			kcs[u.GetName()] = labels
		}
		// (A workload's metadata the API server writes to itself: a
		// DaemonSet's template generation annotation.)
		if _, grant := grantKinds[gvk.GroupKind()]; grant || (contentBounded(u) && !workloadKinds[gvk.GroupKind()]) {
			l, an := map[string]any{}, map[string]any{}
			for k, v := range u.GetLabels() {
				l[k] = v
			}
			for k, v := range u.GetAnnotations() {
				an[k] = v
			}
			metaLabels[keyOf(u)], metaAnnotations[keyOf(u)] = l, an
		}
		p, c, err := pins(renders, keyOf(u))
		if err != nil {
			return nil, nil, fmt.Errorf("asset %s: %w", a.Name, err)
		}
		pinned, containers = append(pinned, p...), append(containers, c...)
		if workloadKinds[gvk.GroupKind()] {
			for _, c := range a.Conditions {
				if c.Type == catalog.CondImage {
					for _, ref := range images[c.Name] {
						trusted = append(trusted, keyOf(u)+"|"+ref)
					}
				}
			}
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
	// Flat lists: CEL map literals need one value type, and a
	// MachineConfig without arguments would make an empty list.
	roles := []string{}
	var args, files, units, ignitions []string
	for _, name := range sortedKeys(mcs) {
		c := mcs[name]
		roles = append(roles, quote(name)+": "+quote(c.role))
		for _, p := range sortedKeys(c.args) {
			args = append(args, name+"|"+p)
		}
		files = append(files, celEntries(name, "file", c.files)...)
		ignitions = append(ignitions, celEntries(name, "ignition", c.ignitions)...)
		units = append(units, celEntries(name, "unit", c.units)...)
	}
	masters := []string{}
	for _, k := range sortedKeys(schedulable) {
		masters = append(masters, quote(k)+": "+strconv.FormatBool(schedulable[k]))
	}
	// One entry per object: two assets naming one object (a replacement
	// pair) must pin it alike.
	pinMap := func(es []pinnedEntry) (string, error) {
		byKey := map[string]string{}
		for _, e := range es {
			if prev, ok := byKey[e.key]; ok && prev != e.literal {
				return "", fmt.Errorf("%s: two assets render it with different content; the admission policy cannot pin it", e.key)
			}
			byKey[e.key] = e.literal
		}
		parts := []string{}
		for _, k := range sortedKeys(byKey) {
			parts = append(parts, quote(k)+": "+byKey[k])
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	pinnedLit, err := pinMap(pinned)
	if err != nil {
		return nil, nil, err
	}
	containersLit, err := pinMap(containers)
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(trusted)
	mcArgsOf := "variables.mcArgs.exists(p, p.startsWith(request.name + '|') && string(a).matches(p.substring(size(request.name) + 1)))"
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			ParamKind:        &admissionv1.ParamKind{APIVersion: schedulerGVK.GroupVersion().String(), Kind: schedulerGVK.Kind},
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
			// Only the autopilot's own writes: everyone else is judged by RBAC alone.
			MatchConditions: []admissionv1.MatchCondition{{Name: "autopilot", Expression: "request.userInfo.username == " + quote(serviceAccount)}},
			Variables: []admissionv1.Variable{
				{Name: "resource", Expression: "request.resource.group + '/' + request.resource.resource"},
				// A Namespace's own admission request carries its name as
				// the namespace too; the catalog keys it as cluster-scoped.
				{Name: "key", Expression: "(variables.resource == '/namespaces' ? '' : request.?namespace.orValue('')) + '/' + request.name"},
				// Variables see only those before them.
				{Name: "obj", Expression: "dyn(object)"},
				{Name: "old", Expression: "oldObject == null ? dyn(null) : dyn(oldObject)"},
				{Name: "allowed", Expression: "{" + strings.Join(entries, ", ") + "}"},
				{Name: "mcRoles", Expression: "{" + strings.Join(roles, ", ") + "}"},
				{Name: "mcArgs", Expression: list(args)},
				{Name: "mcFiles", Expression: "[" + strings.Join(files, ", ") + "]"},
				{Name: "mcUnits", Expression: "[" + strings.Join(units, ", ") + "]"},
				{Name: "kcPools", Expression: celMap(kcs)},
				{Name: "kcPairs", Expression: "[" + strings.Join(sortedKeys(kcPairs), ", ") + "]"},
				{Name: "metaLabels", Expression: celValue(metaLabels)},
				{Name: "metaAnnotations", Expression: celValue(metaAnnotations)},
				{Name: "mcIgnitions", Expression: "[" + strings.Join(ignitions, ", ") + "]"},
				// A MachineConfig's and a KubeletConfig's free-form maps
				// (spec.config is Ignition, spec.kubeletConfig the
				// kubelet's), as the policy reads them; {} when absent.
				{Name: "mcConfig", Expression: "'config' in variables.obj.spec ? variables.obj.spec.config : {}"},
				{Name: "oldConfig", Expression: "variables.old == null || !('config' in variables.old.spec) ? null : variables.old.spec.config"},
				{Name: "kcConf", Expression: "'kubeletConfig' in variables.obj.spec ? variables.obj.spec.kubeletConfig : {}"},
				{Name: "oldKcConf", Expression: "variables.old == null || !('kubeletConfig' in variables.old.spec) ? null : variables.old.spec.kubeletConfig"},
				{Name: "objKey", Expression: "variables.resource + '|' + variables.key"},
				{Name: "schedulable", Expression: "{" + strings.Join(masters, ", ") + "}"},
				{Name: "pinned", Expression: pinnedLit},
				{Name: "containers", Expression: containersLit},
				{Name: TrustedImages, Expression: list(trusted)},
				{Name: "defaulted", Expression: list(defaultedFields())},
				{Name: "zeros", Expression: "[dyn(null), dyn(false), dyn(0), dyn(''), dyn([]), dyn({})]"},
			},
			Validations: []admissionv1.Validation{
				{
					Expression:        "variables.resource in variables.allowed && variables.key in variables.allowed[variables.resource]",
					MessageExpression: "'the autopilot writes only the objects its catalog names: ' + variables.resource + ' ' + variables.key + ' is not one of them'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A deletion removes only an object carrying the
					// managed-by label (engine.Guard asks it of every
					// deletion): a name a tombstone shares with an admin's
					// object (a ClusterLogForwarder "instance") never
					// reaches theirs.
					Expression:        "request.operation != 'DELETE' || (variables.old != null && variables.old.metadata.?labels[?" + quote(annotations.ManagedByLabel) + "].orValue('') == " + quote(annotations.ManagedByValue) + ")",
					MessageExpression: "'the autopilot deletes only objects carrying the " + annotations.ManagedByLabel + " label: ' + variables.resource + ' ' + variables.key + ' does not'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A MachineConfig keeps its pool and holds only the
					// kernel arguments, files and units the catalog renders
					// for it (each file and unit whole: mode, contents,
					// drop-ins): the pod cannot reach the master pool, add
					// a unit, rewrite a script or turn SELinux off. Judged
					// on what the write changes: what another manager (a
					// person) put on the object before is not the
					// autopilot's to justify, and its server-side apply
					// keeps it.
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/machineconfigs' || " +
						"(request.name in variables.mcRoles && " +
						"(object.metadata.?labels[?'" + mcRoleLabel + "'].orValue('') == variables.mcRoles[request.name] || " +
						"(oldObject != null && object.metadata.?labels[?'" + mcRoleLabel + "'].orValue('') == oldObject.metadata.?labels[?'" + mcRoleLabel + "'].orValue(''))) && " +
						"object.spec.?kernelArguments.orValue([]).all(a, " + mcArgsOf + " || " +
						"(oldObject != null && oldObject.spec.?kernelArguments.orValue([]).exists(o, o == a))) && " +
						"object.spec.?config.?storage.?files.orValue([]).all(f, variables.mcFiles.exists(p, p.mc == request.name && p.file == f) || " +
						"(oldObject != null && oldObject.spec.?config.?storage.?files.orValue([]).exists(o, o == f))) && " +
						"object.spec.?config.?systemd.?units.orValue([]).all(u, variables.mcUnits.exists(p, p.mc == request.name && p.unit == u) || " +
						"(oldObject != null && oldObject.spec.?config.?systemd.?units.orValue([]).exists(o, o == u))))",
					MessageExpression: "'MachineConfig ' + request.name + ': the autopilot writes a MachineConfig only for its catalog pool role, with the kernel arguments, files and units the catalog renders'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// The HyperConverged's annotations and labels are its
					// editors' input (the switches, the pause, the window):
					// the token's writes to it change only the marks the
					// autopilot stamps on every object it applies.
					Expression: "request.operation != 'UPDATE' || variables.resource != 'hco.kubevirt.io/hyperconvergeds' || (" +
						sameExcept("annotations", stampedAnnotations) + " && " + sameExcept("labels", []string{annotations.ManagedByLabel}) + ")",
					MessageExpression: "'HyperConverged ' + request.name + ': the autopilot never changes its annotations or labels (its editors\\' switches, pause and window)'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// An object the catalog renders only where masters run
					// workloads (or only where they do not) follows the
					// cluster's Scheduler, the policy's parameter.
					Expression: "request.operation == 'DELETE' || !(variables.objKey in variables.schedulable) || " +
						"(params != null && params.spec.?mastersSchedulable.orValue(false) == variables.schedulable[variables.objKey])",
					MessageExpression: "variables.objKey + ': the catalog renders it only where the Scheduler cluster says mastersSchedulable ' + string(variables.schedulable[variables.objKey])",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// Roles, bindings and SCCs grant rights: every field
					// their type has holds what the catalog renders. A
					// workload's pod holds the catalog's identity, host
					// access, security context and volumes.
					Expression: "request.operation == 'DELETE' || !(variables.objKey in variables.pinned) || " +
						"(variables.resource in " + list(workloadResources()) + " ? " +
						samePinned("variables.obj.spec.template.spec", "(variables.old == null ? null : variables.old.spec.template.spec)", "variables.pinned[variables.objKey]") +
						" : " + samePinned("variables.obj", "variables.old", "variables.pinned[variables.objKey]") + ")",
					MessageExpression: "variables.objKey + ': the autopilot writes it only as the catalog renders it (its rules, subjects, role, permissions, or its pod\\'s identity, host access and volumes)'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// Labels and annotations of what the policy bounds by
					// content are the rendered ones and the autopilot's
					// stamps, or as they were: a role's label aggregates it
					// into others (aggregate-to-admin), a MachineConfig's
					// generated-by-controller-version annotation stops
					// MCO rendering its pool, a KubeletConfig's
					// mc-name-suffix names the MachineConfig MCO writes.
					Expression: "request.operation == 'DELETE' || !(variables.objKey in variables.metaLabels) || (" +
						metaKept("labels", "variables.metaLabels", []string{annotations.ManagedByLabel}) + " && " +
						metaKept("annotations", "variables.metaAnnotations", stampedAnnotations) + ")",
					MessageExpression: "variables.objKey + ': the autopilot labels and annotates it only as the catalog renders it'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A workload's containers are the catalog's, each with
					// its command, arguments, environment, security context
					// and mounts, running an image the policy trusts, and no
					// probe or hook runs a command; or unchanged.
					Expression: "request.operation == 'DELETE' || !(variables.resource in " + list(workloadResources()) + ") || !(variables.objKey in variables.pinned) || " +
						"variables.obj.spec.template.spec.containers.all(c, " +
						"((variables.objKey + '|' + c.name) in variables.containers && (variables.objKey + '|' + c.image) in variables.images && " +
						samePinned("c", "", "variables.containers[variables.objKey + '|' + c.name]") + " && " +
						list(probes) + ".all(p, !(p in c) || (!('exec' in c[p]) && !('host' in ('httpGet' in c[p] ? c[p].httpGet : {})) && !('host' in ('tcpSocket' in c[p] ? c[p].tcpSocket : {})))) && !('lifecycle' in c)) || " +
						"(variables.old != null && variables.old.spec.template.spec.containers.exists(o, o == c)))",
					MessageExpression: "variables.objKey + ': the autopilot runs only the catalog containers, with their commands and settings, on the images its admission policy trusts (cmd/rbac-gen --image)'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// Ignition and the kubelet decode these maps with Go's
					// encoding/json, which matches keys case-insensitively
					// (MCO: ignition config v3 parse; DecodeKubeletConfig):
					// "Systemd" or "ReadOnlyPort" reach the node as
					// systemd and readOnlyPort. So the keys are an exact
					// allow-list, and the Ignition section (a merge or
					// replace of another config) is the catalog's.
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/machineconfigs' || (" +
						keysIn("variables.mcConfig", "variables.oldConfig", []string{"ignition", "storage", "systemd", "passwd"}) + " && " +
						keysIn("('storage' in variables.mcConfig ? variables.mcConfig.storage : {})", "(variables.oldConfig == null || !('storage' in variables.oldConfig) ? null : variables.oldConfig.storage)",
							[]string{"files", "links", "directories", "disks", "raid", "filesystems", "luks"}) + " && " +
						keysIn("('systemd' in variables.mcConfig ? variables.mcConfig.systemd : {})", "(variables.oldConfig == null || !('systemd' in variables.oldConfig) ? null : variables.oldConfig.systemd)",
							[]string{"units"}) + " && " +
						"(!('ignition' in variables.mcConfig) || variables.mcIgnitions.exists(p, p.mc == request.name && p.ignition == variables.mcConfig.ignition) || " +
						"(variables.oldConfig != null && 'ignition' in variables.oldConfig && variables.oldConfig.ignition == variables.mcConfig.ignition)))",
					MessageExpression: "'MachineConfig ' + request.name + ': the autopilot writes only the Ignition sections and version the catalog renders, spelled as Ignition spells them'",
					Reason:            ptrReason(metav1.StatusReasonForbidden),
				},
				{
					// A KubeletConfig's settings are the catalog's, each
					// key spelled as the kubelet spells it and valued as
					// rendered (staticPodURL, a TLS profile, anonymous
					// access under another spelling are not), or as they
					// were.
					Expression: "request.operation == 'DELETE' || variables.resource != 'machineconfiguration.openshift.io/kubeletconfigs' || (" +
						"variables.kcConf.all(k, variables.kcPairs.exists(p, p.kc == request.name && p.at == 'kubeletConfig' && p.key == k && p.value == variables.kcConf[k]) || " +
						"(variables.oldKcConf != null && k in variables.oldKcConf && variables.oldKcConf[k] == variables.kcConf[k])) && " +
						"['autoSizingReserved', 'logLevel', 'tlsSecurityProfile'].all(k, !(k in variables.obj.spec) || " +
						"variables.kcPairs.exists(p, p.kc == request.name && p.at == 'spec' && p.key == k && p.value == variables.obj.spec[k]) || " +
						"(variables.old != null && k in variables.old.spec && variables.old.spec[k] == variables.obj.spec[k])))",
					MessageExpression: "'KubeletConfig ' + request.name + ': the autopilot writes only the kubelet settings the catalog renders'",
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
			PolicyName: PolicyName,
			// Every OpenShift cluster has it. Without it, every write of
			// the autopilot is refused ("Allow" would skip the policy
			// whole, not only the master objects).
			ParamRef:          &admissionv1.ParamRef{Name: "cluster", ParameterNotFoundAction: ptrAction(admissionv1.DenyAction)},
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding, nil
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

func ptrAction(a admissionv1.ParameterNotFoundActionType) *admissionv1.ParameterNotFoundActionType {
	return &a
}

// workloadResources are the policy's resource names of workloadKinds.
func workloadResources() []string {
	var out []string
	for gk := range workloadKinds {
		out = append(out, gk.Group+"/"+Resource(gk.Kind))
	}
	sort.Strings(out)
	return out
}

// stampedAnnotations are the annotations the autopilot writes on what it
// applies (pkg/engine stamp and steps): every other one on the HCO is an
// input.
var stampedAnnotations = []string{annotations.Asset, annotations.Shared, annotations.Facts, annotations.FactRollouts, annotations.Adopted}

// sameExcept is CEL saying the object's metadata map field (annotations,
// labels) holds what the old object's did, but at keys.
func sameExcept(field string, keys []string) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	old := "oldObject.metadata.?" + field + ".orValue({})"
	return "(" + cur + ".all(k, k in " + list(keys) + " || (k in " + old + " && " + old + "[k] == " + cur + "[k])) && " +
		old + ".all(k, k in " + list(keys) + " || k in " + cur + "))"
}

// keysIn is CEL saying every key of the dyn map cur is one of keys, or
// was in old (a dyn map, or null) with the same value.
func keysIn(cur, old string, keys []string) string {
	return cur + ".all(k, k in " + list(keys) + " || (" + old + " != null && k in " + old + " && " + old + "[k] == " + cur + "[k]))"
}

// kcSettings are a KubeletConfig's settings as the policy's kcPairs hold
// them: CEL literals {kc, at, key, value}, at "kubeletConfig" (a kubelet
// field) or "spec" (autoSizingReserved, logLevel, tlsSecurityProfile).
func kcSettings(u *unstructured.Unstructured) []string {
	var out []string
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for k, v := range spec {
		switch k {
		case "kubeletConfig":
			m, _ := v.(map[string]any)
			for kk, vv := range m {
				out = append(out, celValue(map[string]any{"kc": u.GetName(), "at": "kubeletConfig", "key": kk, "value": vv}))
			}
		case "machineConfigPoolSelector":
		default:
			out = append(out, celValue(map[string]any{"kc": u.GetName(), "at": "spec", "key": k, "value": v}))
		}
	}
	return out
}

// metaKept is CEL saying every key of the object's metadata map field is
// one of stamped (any value), rendered with the rendered value (in the
// map of maps rendered, by object), or held by the old object with the
// same value.
func metaKept(field, rendered string, stamped []string) string {
	cur := "object.metadata.?" + field + ".orValue({})"
	old := "oldObject.metadata.?" + field + ".orValue({})"
	return cur + ".all(k, k in " + list(stamped) + " || " +
		"(k in " + rendered + "[variables.objKey] && " + rendered + "[variables.objKey][k] == " + cur + "[k]) || " +
		"(oldObject != null && k in " + old + " && " + old + "[k] == " + cur + "[k]))"
}
