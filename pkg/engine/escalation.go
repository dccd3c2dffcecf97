package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rbacGroup is the API group of roles and bindings.
const rbacGroup = "rbac.authorization.k8s.io"

// writerChecked are, per kind, the fields the API server judges against
// the writer's own rights, not only against the right to write the object
// (kubernetes pkg/registry/rbac/role/policybased/storage.go and
// .../clusterrole/policybased/storage.go Storage.Update: the updated
// rules must not grant more than the writer holds (ConfirmNoEscalation),
// and an aggregationRule needs full authority; .../rolebinding and
// .../clusterrolebinding/policybased/storage.go Storage.Update: any change
// beyond the GC fields needs the right to bind the roleRef,
// BindingAuthorized). A person's patch or ignore-fields that changes one
// of them would have the autopilot write, with its own rights, what the
// API server may refuse the annotation's author, whom the autopilot
// cannot know: such an annotation is refused and the object left as it is.
//
// Not listed, and why: a MachineConfig's or KubeletConfig's content, an
// SCC, a DaemonSet's pod template. The API server judges writes of those
// only by the right to write the object, which annotating it needs too:
// whoever could put the annotation there could write the same content
// directly, so the autopilot writes nothing they could not. (Where the
// admission policy of config/rbac is installed, a patch that adds a file
// or unit to one of its MachineConfigs is refused by the API server
// instead, and reported Refused: the autopilot's own power is bounded
// there, not the annotation's author.)
var writerChecked = map[schema.GroupKind][]string{
	{Group: rbacGroup, Kind: "Role"}:               {"rules"},
	{Group: rbacGroup, Kind: "ClusterRole"}:        {"rules", "aggregationRule"},
	{Group: rbacGroup, Kind: "RoleBinding"}:        {"subjects", "roleRef"},
	{Group: rbacGroup, Kind: "ClusterRoleBinding"}: {"subjects", "roleRef"},
}

// escalation says why desired, the rendered object baseline after a
// person's customization, must not be written: it changes a field the API
// server judges against the writer's own rights (writerChecked). "" when
// it changes none.
func escalation(baseline, desired *unstructured.Unstructured, annotation string) string {
	fields := writerChecked[baseline.GroupVersionKind().GroupKind()]
	var changed []string
	for _, f := range fields {
		// A field the customization leaves out is not sent (the mask
		// releases a co-owned one): sending less grants nothing.
		if v, sent := desired.Object[f]; sent && !equality.Semantic.DeepEqual(baseline.Object[f], v) {
			changed = append(changed, f)
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return fmt.Sprintf("annotation %s changes %s of %s %s, which the API server grants only to a writer holding those rights; "+
		"the autopilot cannot know who wrote the annotation, so it writes nothing for it and leaves the object as it is. "+
		"Change %s on the object yourself (the API server judges your rights), or remove the annotation",
		annotation, strings.Join(changed, ", "), baseline.GetKind(), baseline.GetName(), strings.Join(changed, ", "))
}

// escalates is escalation's verdict on d: Invalid, naming the annotation.
func escalates(d *Decision, baseline, desired *unstructured.Unstructured, annotation string) bool {
	why := escalation(baseline, desired, annotation)
	if why == "" {
		return false
	}
	d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotation, why, Escalates
	return true
}
