package report

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func TestIdleReason(t *testing.T) {
	crd := func(versions ...string) apiextensionsv1.CustomResourceDefinition {
		c := apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: rendercontext.HCOCRD}}
		for _, v := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
		}
		return c
	}
	notFound := errors.New("not found")
	cases := []struct {
		crds []apiextensionsv1.CustomResourceDefinition
		want IdleReason
		msg  string
	}{
		{nil, IdleHCOCRDAbsent, "not installed"},
		{[]apiextensionsv1.CustomResourceDefinition{crd("v1beta1")}, IdleHCOVersionUnserved, "serves v1beta1 but not v1"},
		{[]apiextensionsv1.CustomResourceDefinition{crd("v1beta1", "v1")}, IdleHCOAbsent, "no HyperConverged"},
	}
	for _, c := range cases {
		got := IdleFor(rendercontext.Facts{CRDs: c.crds}, "openshift-cnv", notFound)
		if got.Reason != c.want || !strings.Contains(got.Message, c.msg) {
			t.Errorf("%v: got %+v", c.crds, got)
		}
	}
}
