package render_test

import (
	"strings"
	"testing"
	"testing/fstest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

const kdCRD = "kubedeschedulers.operator.openshift.io"

func deschedulerCRD(profiles []string, nodeLimit bool) *apiextensionsv1.CustomResourceDefinition {
	enum := []apiextensionsv1.JSON{}
	for _, p := range profiles {
		enum = append(enum, apiextensionsv1.JSON{Raw: []byte(`"` + p + `"`)})
	}
	limits := map[string]apiextensionsv1.JSONSchemaProps{"total": {Type: "integer"}}
	if nodeLimit {
		limits["node"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = kdCRD
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"profiles":       {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Enum: enum}}},
			"evictionLimits": {Properties: limits},
		}}}},
	}}}
	return crd
}

func TestDeschedulerProfileFallback(t *testing.T) {
	r := render.New(assets.FS)
	hco := map[string]any{"spec": map[string]any{"virtualization": map[string]any{"liveMigrationConfig": map[string]any{
		"parallelMigrationsPerCluster": int64(7), "parallelOutboundMigrationsPerNode": int64(3)}}}}
	cases := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		profile  string
		nodeSeen bool
	}{
		{"4.21", deschedulerCRD([]string{"LongLifecycle", "DevKubeVirtRelieveAndMigrate", "KubeVirtRelieveAndMigrate"}, true), "KubeVirtRelieveAndMigrate", true},
		{"4.19", deschedulerCRD([]string{"LongLifecycle", "DevKubeVirtRelieveAndMigrate"}, false), "DevKubeVirtRelieveAndMigrate", false},
		{"4.17", deschedulerCRD([]string{"AffinityAndTaints", "LongLifecycle"}, false), "LongLifecycle", false},
		{"offline", nil, "KubeVirtRelieveAndMigrate", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := &rendercontext.RenderContext{Namespace: "openshift-cnv", HCO: hco, CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{}}
			if tc.crd != nil {
				rc.CRDs[kdCRD] = tc.crd
			}
			u, err := r.Render("descheduler/loadaware.yaml.tpl", rc, nil)
			if err != nil {
				t.Fatal(err)
			}
			profiles, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "profiles")
			if len(profiles) != 1 || profiles[0] != tc.profile {
				t.Fatalf("profiles = %v, want %s", profiles, tc.profile)
			}
			total, _, _ := unstructured.NestedInt64(u.Object, "spec", "evictionLimits", "total")
			node, hasNode, _ := unstructured.NestedInt64(u.Object, "spec", "evictionLimits", "node")
			if total != 7 || hasNode != tc.nodeSeen || (hasNode && node != 3) {
				t.Fatalf("evictionLimits total=%d node=%d (present %v)", total, node, hasNode)
			}
		})
	}
}

func TestRenderRules(t *testing.T) {
	fsys := fstest.MapFS{
		"two.tpl":     {Data: []byte("apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n")},
		"missing.tpl": {Data: []byte("apiVersion: v1\nkind: A\nmetadata: {name: {{ .Params.nope }}}\n")},
		"clock.tpl":   {Data: []byte("{{ now }}")},
		"env.tpl":     {Data: []byte(`{{ env "HOME" }}`)},
		"noname.tpl":  {Data: []byte("apiVersion: v1\nkind: A\n")},
	}
	r := render.New(fsys)
	rc := &rendercontext.RenderContext{}
	for path, want := range map[string]string{
		"two.tpl": "exactly one object", "missing.tpl": "nope", "clock.tpl": "not defined",
		"env.tpl": "not defined", "noname.tpl": "metadata.name",
	} {
		_, err := r.Render(path, rc, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want error containing %q, got %v", path, want, err)
		}
	}
}

func TestEveryAssetRendersOffline(t *testing.T) {
	r := render.New(assets.FS)
	for _, tpl := range []struct{ path, role string }{
		{"hco/golden-config.yaml.tpl", ""}, {"machine-config/swap.yaml.tpl", "worker"},
		{"machine-config/psi.yaml.tpl", "master"}, {"descheduler/loadaware.yaml.tpl", ""},
	} {
		u, err := r.Render(tpl.path, &rendercontext.RenderContext{Namespace: "openshift-cnv"}, map[string]string{"role": tpl.role})
		if err != nil {
			t.Fatalf("%s: %v", tpl.path, err)
		}
		again, _ := r.Render(tpl.path, &rendercontext.RenderContext{Namespace: "openshift-cnv"}, map[string]string{"role": tpl.role})
		a, _ := u.MarshalJSON()
		b, _ := again.MarshalJSON()
		if string(a) != string(b) {
			t.Fatalf("%s renders differently twice", tpl.path)
		}
	}
}
