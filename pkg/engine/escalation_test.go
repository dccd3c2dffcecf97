package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// writerCheckedByHand: the fields the API server judges against the
// writer's own rights, read from kubernetes pkg/registry/rbac/*/policybased
// (Storage.Update), not from the engine's table.
var writerCheckedByHand = map[string][]string{
	"Role": {"/rules"}, "ClusterRole": {"/rules", "/aggregationRule"},
	"RoleBinding": {"/subjects", "/roleRef"}, "ClusterRoleBinding": {"/subjects", "/roleRef"},
}

func checkedByHand(kind, group, path string) bool {
	if group != "rbac.authorization.k8s.io" {
		return false
	}
	for _, f := range writerCheckedByHand[kind] {
		if path == f || strings.HasPrefix(path, f+"/") {
			return true
		}
	}
	return false
}

// leaves lists the JSON pointers of v's scalar leaves under prefix.
func leaves(prefix string, v any) []string {
	switch t := v.(type) {
	case map[string]any:
		var out []string
		for k, e := range t {
			out = append(out, leaves(prefix+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), e)...)
		}
		return out
	case []any:
		var out []string
		for i, e := range t {
			out = append(out, leaves(fmt.Sprintf("%s/%d", prefix, i), e)...)
		}
		return out
	}
	return []string{prefix}
}

func other(v any) any {
	switch t := v.(type) {
	case string:
		return t + "-changed"
	case bool:
		return !t
	case int64:
		return t + 1
	case float64:
		return t + 1
	}
	return "changed"
}

// Over every managed object the catalog renders and every field under it,
// a person's patch that changes a field the API server judges against the
// writer's own rights is refused (Invalid, escalates, nothing written);
// a patch of any other field never is, for that reason. Whole-field
// patches (adding a rule, a subject) and ignore-fields over a live value
// that differs are refused the same way.
func TestCustomizationsThatWouldEscalateAreRefused(t *testing.T) {
	ev, cat, _ := setup(t, nil)
	hco := &unstructured.Unstructured{Object: map[string]any{}}
	hco.SetName("kubevirt-hyperconverged")
	ann := map[string]string{}
	for i := range cat.Features {
		if s := cat.Features[i].SwitchAnnotation(); s != "" {
			ann[s] = "true"
		}
	}
	hco.SetAnnotations(ann)
	// OpenShift, with the operand images: every RBAC object the catalog
	// ships is rendered.
	infra := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"controlPlaneTopology": "HighlyAvailable"}}}
	infra.SetName("cluster")
	rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, Infrastructure: infra,
		Nodes:    []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}},
		Observed: rendercontext.Observed{Images: map[string]string{"kubevirt-metrics-exporter": "quay.io/kubevirt/metrics-exporter:v1"}}})
	rc.AssumeAllKinds = true
	eval := ev.Preview(context.Background(), cat, rc, liveMap{})
	checked, other_ := 0, 0
	for _, d := range eval.Decisions {
		if d.Desired == nil {
			continue
		}
		base := d.Desired
		key := base.GetKind() + "/" + base.GetNamespace() + "/" + base.GetName()
		evalWith := func(live *unstructured.Unstructured) engine.Decision {
			return ev.Evaluate(context.Background(), d.Asset, eval.Context, liveMap{key: live})
		}
		patched := func(ops []map[string]any) engine.Decision {
			live := base.DeepCopy()
			b, _ := json.Marshal(ops)
			a := live.GetAnnotations()
			a[annotations.Patch] = string(b)
			live.SetAnnotations(a)
			return evalWith(live)
		}
		for _, p := range leaves("", base.Object) {
			if p == "/apiVersion" || p == "/kind" || strings.HasPrefix(p, "/metadata") || strings.HasPrefix(p, "/status") {
				continue
			}
			ptr, err := jsonpointer.Parse(p)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := jsonpointer.Get(base.Object, ptr)
			got := patched([]map[string]any{{"op": "replace", "path": p, "value": other(v)}})
			want := checkedByHand(base.GetKind(), base.GroupVersionKind().Group, p)
			refused := got.Verdict == engine.VerdictInvalid && got.InvalidReason == engine.Escalates
			switch {
			case want && !refused:
				t.Errorf("%s %s: a patch of %s is %s (%s), want refused as escalating", d.Asset.Name, key, p, got.Verdict, got.Reason)
			case !want && got.InvalidReason == engine.Escalates:
				t.Errorf("%s %s: a patch of %s refused as escalating: %s", d.Asset.Name, key, p, got.Reason)
			case want:
				checked++
				if got.Annotation != annotations.Patch || !strings.Contains(got.Reason, base.GetName()) {
					t.Errorf("%s: the refusal names the annotation and the object: %+v", key, got)
				}
			default:
				other_++
			}
		}
		if fields := writerCheckedByHand[base.GetKind()]; len(fields) > 0 {
			for _, f := range fields {
				if got := patched([]map[string]any{{"op": "add", "path": f, "value": []any{}}}); got.InvalidReason != engine.Escalates && f != "/roleRef" {
					t.Errorf("%s: replacing %s whole: %s %s", key, f, got.Verdict, got.Reason)
				}
			}
			if base.GetKind() == "Role" || base.GetKind() == "ClusterRole" {
				rule := map[string]any{"apiGroups": []any{"machineconfiguration.openshift.io"}, "resources": []any{"machineconfigs"}, "verbs": []any{"create"}}
				if got := patched([]map[string]any{{"op": "add", "path": "/rules/-", "value": rule}}); got.InvalidReason != engine.Escalates {
					t.Errorf("%s: adding a rule: %s %s", key, got.Verdict, got.Reason)
				}
				// ignore-fields keeping a live value the baseline does not have.
				live := base.DeepCopy()
				rules, _, _ := unstructured.NestedSlice(live.Object, "rules")
				_ = unstructured.SetNestedSlice(live.Object, append(rules, rule), "rules")
				a := live.GetAnnotations()
				a[annotations.IgnoreFields] = "/rules"
				live.SetAnnotations(a)
				if got := evalWith(live); got.InvalidReason != engine.Escalates || got.Annotation != annotations.IgnoreFields {
					t.Errorf("%s: ignore-fields keeping a rule the baseline lacks: %s %s", key, got.Verdict, got.Reason)
				}
				// The same mask over a live value equal to the baseline changes nothing: allowed.
				live = base.DeepCopy()
				a = live.GetAnnotations()
				a[annotations.IgnoreFields] = "/rules"
				live.SetAnnotations(a)
				if got := evalWith(live); got.InvalidReason == engine.Escalates {
					t.Errorf("%s: ignore-fields over an unchanged value refused: %s", key, got.Reason)
				}
			}
		}
	}
	if checked == 0 || other_ == 0 {
		t.Fatalf("no writer-checked field (%d) or no other field (%d) was patched: the catalog has changed", checked, other_)
	}
}
