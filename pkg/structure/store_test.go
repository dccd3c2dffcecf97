package structure_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// The store keeps each version's structure when the cache drops the
// schema, and a copy already trimmed (an informer may hand one back)
// never erases it.
func TestStoreKeepsWhatTheTrimDrops(t *testing.T) {
	atomic := "atomic"
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "things.example.com"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"selector": {Type: "object", XMapType: &atomic},
			}}},
		}},
	}, {Name: "v2", Served: true}}
	s := structure.NewStore()
	s.Put(crd)
	trimmed := crd.DeepCopy()
	for i := range trimmed.Spec.Versions {
		trimmed.Spec.Versions[i].Schema = nil
	}
	s.Put(trimmed)
	got := s.Snapshot()[crd.Name]
	if st := got["v1"]; !st.Known || !st.AtomicMaps["/spec/selector"] {
		t.Fatalf("v1: %+v", st)
	}
	if st, ok := got["v2"]; ok && st.Known {
		t.Fatalf("v2 has no schema: unknown, got %+v", st)
	}
	if want := structure.FromCRD(crd, "v1"); len(want.AtomicMaps) != len(got["v1"].AtomicMaps) {
		t.Fatal("the stored structure is the schema's")
	}
}
