package rbac

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	securityv1 "github.com/openshift/api/security/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// grantKinds are the kinds whose content grants rights: a role's rules, a
// binding's subjects and role, an SCC's permissions. The policy pins every
// top-level field their Go type has (metadata aside) to the catalog's
// render: the autopilot's token may not widen one of them.
var grantKinds = map[schema.GroupKind]reflect.Type{
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:            reflect.TypeOf(rbacv1.ClusterRole{}),
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:                   reflect.TypeOf(rbacv1.Role{}),
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:     reflect.TypeOf(rbacv1.ClusterRoleBinding{}),
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:            reflect.TypeOf(rbacv1.RoleBinding{}),
	{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}: reflect.TypeOf(securityv1.SecurityContextConstraints{}),
}

// serverDefaults are the values an API server sets on a field a write
// leaves out, which the policy then sees: pinned as the default, and
// admitted absent (an older CRD without the field).
var serverDefaults = map[schema.GroupKind]map[string]any{
	// openshift/api security/v1 types.go, SecurityContextConstraints
	// UserNamespaceLevel: +kubebuilder:default:="AllowHostLevel".
	{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}: {"userNamespaceLevel": "AllowHostLevel"},
}

// defaultedFields are the fields of serverDefaults, for the policy.
func defaultedFields() []string {
	var out []string
	for _, m := range serverDefaults {
		out = append(out, sortedKeys(m)...)
	}
	sort.Strings(out)
	return out
}

// workloadKinds run pods from a template at spec.template.
var workloadKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
}

// podPinned are the pod template's fields that decide what runs and with
// which rights (k8s.io/api core/v1 PodSpec): pinned to the render.
// Placement (node selector, affinity, tolerations) is the HCO editor's
// and not pinned. The deprecated serviceAccount is not either: the API
// server sets it from serviceAccountName and reads it only when that is
// empty (core/v1 conversion, Convert_v1_PodSpec_To_core_PodSpec).
var podPinned = []string{"serviceAccountName", "automountServiceAccountToken", "hostPID", "hostIPC", "hostNetwork",
	"hostUsers", "shareProcessNamespace", "securityContext", "volumes", "initContainers", "ephemeralContainers", "nodeName",
	"runtimeClassName", "priorityClassName", "hostAliases", "dnsConfig"}

// containerPinned are a container's fields that decide what it runs and
// with which rights (core/v1 Container); its image is judged against the
// images the policy is generated with.
var containerPinned = []string{"command", "args", "env", "envFrom", "securityContext", "volumeMounts", "volumeDevices", "lifecycle", "workingDir"}

// probes may not run a command in the container (core/v1 ProbeHandler
// exec): the catalog's probes are HTTP.
var probes = []string{"livenessProbe", "readinessProbe", "startupProbe"}

// topFields are the JSON names of a type's fields, its type and object
// metadata aside.
func topFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "metadata" {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// pinnedFields is a CEL literal of a map from each field name to its
// rendered value in m, null when absent or empty (the policy then admits
// it absent or empty).
func pinnedFields(m map[string]any, fields []string, defaults map[string]any) string {
	var parts []string
	for _, f := range fields {
		v := m[f]
		if empty(v) {
			v = defaults[f]
		}
		parts = append(parts, quote(f)+": "+celValue(v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// pinnedEntry is a pin of one object's (or container's) fields.
type pinnedEntry struct{ key, literal string }

// pins returns the pins of a rendered object, which must render the same
// in every context reach tried: the grant kinds' fields, or a workload's
// pod and containers.
func pins(renders []*unstructured.Unstructured, key string) (objects, containers []pinnedEntry, err error) {
	u := renders[0]
	gk := u.GroupVersionKind().GroupKind()
	var fields []string
	if t, ok := grantKinds[gk]; ok {
		fields = topFields(t)
	}
	for _, o := range renders[1:] {
		if !sameAt(u, o, fields, workloadKinds[gk]) {
			return nil, nil, fmt.Errorf("%s %s: what the admission policy pins differs between renders (switches, feature gates): it cannot be pinned", gk.Kind, u.GetName())
		}
	}
	if fields != nil {
		objects = append(objects, pinnedEntry{key, pinnedFields(u.Object, fields, serverDefaults[gk])})
	}
	if workloadKinds[gk] {
		pod, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
		objects = append(objects, pinnedEntry{key, pinnedFields(pod, podPinned, nil)})
		for _, c := range maps(pod["containers"]) {
			containers = append(containers, pinnedEntry{key + "|" + str(c["name"]), pinnedFields(c, containerPinned, nil)})
		}
	}
	return objects, containers, nil
}

func sameAt(a, b *unstructured.Unstructured, fields []string, workload bool) bool {
	for _, f := range fields {
		if !reflect.DeepEqual(a.Object[f], b.Object[f]) {
			return false
		}
	}
	if workload {
		pa, _, _ := unstructured.NestedMap(a.Object, "spec", "template", "spec")
		pb, _, _ := unstructured.NestedMap(b.Object, "spec", "template", "spec")
		for _, f := range podPinned {
			if !reflect.DeepEqual(pa[f], pb[f]) {
				return false
			}
		}
		if !reflect.DeepEqual(pa["containers"], pb["containers"]) {
			ca, cb := maps(pa["containers"]), maps(pb["containers"])
			if len(ca) != len(cb) {
				return false
			}
			for i := range ca {
				for _, f := range append([]string{"name"}, containerPinned...) {
					if !reflect.DeepEqual(ca[i][f], cb[i][f]) {
						return false
					}
				}
			}
		}
	}
	return true
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case int64:
		return t == 0
	case float64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// celValue is a CEL literal of a JSON value, each value wrapped in dyn()
// so that maps and lists of mixed values are one type.
func celValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "dyn(null)"
	case bool:
		return "dyn(" + strconv.FormatBool(t) + ")"
	case string:
		return "dyn(" + quote(t) + ")"
	case int64:
		return "dyn(" + strconv.FormatInt(t, 10) + ")"
	case int:
		return "dyn(" + strconv.Itoa(t) + ")"
	case float64:
		if t == float64(int64(t)) {
			return "dyn(" + strconv.FormatInt(int64(t), 10) + ")"
		}
		return "dyn(" + strconv.FormatFloat(t, 'g', -1, 64) + ")"
	case []any:
		parts := make([]string, len(t))
		for i, x := range t {
			parts[i] = celValue(x)
		}
		return "dyn([" + strings.Join(parts, ", ") + "])"
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = quote(k) + ": " + celValue(t[k])
		}
		return "dyn({" + strings.Join(parts, ", ") + "})"
	}
	return "dyn(null)"
}

// samePinned is CEL saying that, for every field f the map expression
// want pins, the dyn map cur holds the pinned value (or, pinned null,
// nothing or an empty value), or holds it as old (a dyn map, null on
// create; "" to not ask) did: what another manager put there before is
// not the autopilot's write.
func samePinned(cur, old, want string) string {
	e := want + ".all(f, " +
		"(f in " + cur + " ? " + cur + "[f] : null) == " + want + "[f] || " +
		"(" + want + "[f] == null && (!(f in " + cur + ") || " + cur + "[f] in variables.zeros)) || " +
		"(!(f in " + cur + ") && f in variables.defaulted)"
	if old != "" {
		e += " || (" + old + " != null && (f in " + cur + ") == (f in " + old + ") && (!(f in " + cur + ") || " + cur + "[f] == " + old + "[f]))"
	}
	return e + ")"
}
