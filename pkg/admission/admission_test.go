package admission

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rbac"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

const me = "system:serviceaccount:ns:autopilot"

func obj(kind string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("admissionregistration.k8s.io/v1")
	u.SetKind(kind)
	u.SetName(rbac.PolicyName)
	return u
}

func policyFor(user string) *unstructured.Unstructured {
	return obj("ValidatingAdmissionPolicy", map[string]any{"matchConditions": []any{
		map[string]any{"name": "autopilot", "expression": "request.userInfo.username == " + strconv.Quote(user)}}})
}

func binding(policy string, actions ...any) *unstructured.Unstructured {
	return obj("ValidatingAdmissionPolicyBinding", map[string]any{"policyName": policy, "validationActions": actions})
}

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		name    string
		objs    []client.Object
		user    string
		readErr bool
		want    State
	}{
		{"enforced", []client.Object{policyFor(me), binding(rbac.PolicyName, "Deny")}, me, false, Enforced},
		{"enforced, also audited", []client.Object{policyFor(me), binding(rbac.PolicyName, "Audit", "Deny")}, me, false, Enforced},
		{"no policy", []client.Object{binding(rbac.PolicyName, "Deny")}, me, false, Absent},
		{"no binding", []client.Object{policyFor(me)}, me, false, Absent},
		{"binding only warns", []client.Object{policyFor(me), binding(rbac.PolicyName, "Warn")}, me, false, NotEnforced},
		{"binding of another policy", []client.Object{policyFor(me), binding("other", "Deny")}, me, false, NotEnforced},
		{"policy for another namespace", []client.Object{policyFor("system:serviceaccount:other:autopilot"), binding(rbac.PolicyName, "Deny")}, me, false, NotEnforced},
		{"identity unknown", []client.Object{policyFor(me), binding(rbac.PolicyName, "Deny")}, "", false, Unknown},
		{"cannot read", nil, me, true, Unknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(c.objs...)
			if c.readErr {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return errors.New("forbidden")
				}})
			}
			got, reason := Judge(context.Background(), b.Build(), c.user, nil)
			if got != c.want {
				t.Fatalf("got %s (%s), want %s", got, reason, c.want)
			}
			if (got == Enforced) != (reason == "") {
				t.Fatalf("a reason only when not enforced: %s %q", got, reason)
			}
		})
	}
}

// With the generated policy to judge by, existence is not enough: a
// binding that narrows it, a policy that fails open, judges fewer kinds or
// operations, lacks a validation, has another variable or one more match
// condition (which can exempt any write) is not enforced; the fields the
// API server defaults (empty selectors, matchPolicy) change nothing.
func TestJudgeByContent(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tombstone.Load(assets.FS, assets.TombstonesDir)
	if err != nil {
		t.Fatal(err)
	}
	policy, binding, err := rbac.AdmissionPolicy(assets.FS, cat, ts, "openshift-cnv", me, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Expected{Policy: policy, Binding: binding}
	toU := func(o any, kind string) *unstructured.Unstructured {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		return u
	}
	equivalent := admissionv1.Equivalent
	ignore := admissionv1.Ignore
	for _, c := range []struct {
		name string
		edit func(p *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding)
		want State
	}{
		{"as generated", func(*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {}, Enforced},
		{"as the API server defaults it", func(p *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			all := admissionv1.AllScopes
			for i := range p.Spec.MatchConstraints.ResourceRules {
				p.Spec.MatchConstraints.ResourceRules[i].Scope = &all
			}
			p.Spec.MatchConstraints.MatchPolicy = &equivalent
			p.Spec.MatchConstraints.NamespaceSelector, p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{}, &metav1.LabelSelector{}
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent}
		}, Enforced},
		{"binding excludes machineconfigs", func(_ *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{ExcludeResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.OperationAll}, Rule: admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"*"}, Resources: []string{"machineconfigs"}}}}}}
		}, NotEnforced},
		{"binding selects some namespaces", func(_ *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}, NotEnforced},
		{"policy fails open", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.FailurePolicy = &ignore
		}, NotEnforced},
		{"policy judges one kind less", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConstraints.ResourceRules = p.Spec.MatchConstraints.ResourceRules[1:]
		}, NotEnforced},
		{"policy judges creates only", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			for i := range p.Spec.MatchConstraints.ResourceRules {
				p.Spec.MatchConstraints.ResourceRules[i].Operations = []admissionv1.OperationType{admissionv1.Create}
			}
		}, NotEnforced},
		{"policy matches one version of MachineConfigs, exactly", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			exact := admissionv1.Exact
			p.Spec.MatchConstraints.MatchPolicy = &exact
		}, NotEnforced},
		{"policy judges namespaced objects only", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			namespaced := admissionv1.NamespacedScope
			for i := range p.Spec.MatchConstraints.ResourceRules {
				p.Spec.MatchConstraints.ResourceRules[i].Scope = &namespaced
			}
		}, NotEnforced},
		{"policy judges one API version only", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			for i := range p.Spec.MatchConstraints.ResourceRules {
				p.Spec.MatchConstraints.ResourceRules[i].APIVersions = []string{"v1alpha1"}
			}
		}, NotEnforced},
		{"policy lacks a validation", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Validations = p.Spec.Validations[1:]
		}, NotEnforced},
		{"policy with a validation that allows all", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Validations[len(p.Spec.Validations)-1].Expression = "true"
		}, NotEnforced},
		{"policy with another variable", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.Variables[0].Expression = "[]"
		}, NotEnforced},
		{"policy with one more match condition", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionv1.MatchCondition{Name: "never", Expression: "false"})
		}, NotEnforced},
		{"binding without the Scheduler as parameter", func(_ *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = nil
		}, NotEnforced},
		{"binding reading another object as the Scheduler", func(_ *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef.Name = "mine"
		}, NotEnforced},
		{"binding skipping the policy without its parameter", func(_ *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding) {
			allow := admissionv1.AllowAction
			b.Spec.ParamRef.ParameterNotFoundAction = &allow
		}, NotEnforced},
		{"policy reading another kind as parameter", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		}, NotEnforced},
		{"policy trusting the admin's images", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			for i := range p.Spec.Variables {
				if p.Spec.Variables[i].Name == rbac.TrustedImages {
					p.Spec.Variables[i].Expression = `["apps/daemonsets|kubevirt-metrics-exporter/kubevirt-metrics-exporter|quay.io/x/y@sha256:0"]`
				}
			}
		}, Enforced},
		{"policy matching everything, with its checks", func(p *admissionv1.ValidatingAdmissionPolicy, _ *admissionv1.ValidatingAdmissionPolicyBinding) {
			p.Spec.MatchConstraints.ResourceRules = []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.OperationAll}, Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}
		}, Enforced},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, b := policy.DeepCopy(), binding.DeepCopy()
			c.edit(p, b)
			cl := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(toU(p, "ValidatingAdmissionPolicy"), toU(b, "ValidatingAdmissionPolicyBinding")).Build()
			got, reason := Judge(context.Background(), cl, me, want)
			if got != c.want {
				t.Fatalf("got %s (%s), want %s", got, reason, c.want)
			}
			if got != Enforced && !strings.Contains(reason, rbac.PolicyName) {
				t.Fatalf("the reason names the object: %q", reason)
			}
		})
	}
}
