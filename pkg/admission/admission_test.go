package admission

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rbac"
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
			got, reason := Judge(context.Background(), b.Build(), c.user)
			if got != c.want {
				t.Fatalf("got %s (%s), want %s", got, reason, c.want)
			}
			if (got == Enforced) != (reason == "") {
				t.Fatalf("a reason only when not enforced: %s %q", got, reason)
			}
		})
	}
}
