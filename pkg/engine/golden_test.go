package engine_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// deschedulerSchema is a KubeDescheduler CRD carrying just the schema parts
// the template reads, for a given operator release.
func deschedulerSchema(profiles []string, newest bool) apiextensionsv1.CustomResourceDefinition {
	enum := []apiextensionsv1.JSON{}
	for _, p := range profiles {
		enum = append(enum, apiextensionsv1.JSON{Raw: []byte(`"` + p + `"`)})
	}
	limits := map[string]apiextensionsv1.JSONSchemaProps{"total": {}}
	custom := map[string]apiextensionsv1.JSONSchemaProps{}
	if newest {
		limits["node"] = apiextensionsv1.JSONSchemaProps{}
		custom["devDeviationThresholds"] = apiextensionsv1.JSONSchemaProps{}
	}
	crd := apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kubedeschedulers.operator.openshift.io"}}
	crd.Spec.Group, crd.Spec.Names.Kind = "operator.openshift.io", "KubeDescheduler"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
		OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"profiles":              {Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Enum: enum}}},
			"evictionLimits":        {Properties: limits},
			"profileCustomizations": {Properties: custom},
		}}}},
	}}}
	return crd
}

func goldenNode(labels map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
}

// withSwap is n with the swap its kubelet reports.
func withSwap(n corev1.Node, bytes int64) corev1.Node {
	n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &bytes}
	return n
}

// The rendered output for representative clusters is kept as golden files,
// so a template change shows up as a reviewable diff (go test -update).
func TestRenderGoldens(t *testing.T) {
	cases := map[string]struct {
		hco   map[string]any
		nodes []corev1.Node
		crds  []apiextensionsv1.CustomResourceDefinition
	}{
		"defaults": {
			hco:   map[string]any{},
			nodes: []corev1.Node{goldenNode(map[string]string{"node-role.kubernetes.io/worker": ""})},
		},
		"everything-on-intel-ocp421": {
			hco: map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{
					"platform.kubevirt.io/enable-loadaware": "true", "platform.kubevirt.io/enable-pci-passthrough": "true",
					"platform.kubevirt.io/enable-vfio-assignment": "true", "platform.kubevirt.io/enable-usb-passthrough": "true",
					"platform.kubevirt.io/enable-higher-density": "true", "platform.kubevirt.io/enable-aaq": "true",
					// "true": the HCO deploys no WASP agent, so memory is overcommitted.
					"platform.kubevirt.io/autopilot": "true",
				}},
				"spec": map[string]any{
					"featureGates": []any{map[string]any{"name": "CPUManager"}},
					"virtualization": map[string]any{"permittedHostDevices": map[string]any{"pciHostDevices": []any{
						map[string]any{"pciDeviceSelector": "10DE:1EB8", "resourceName": "nvidia.com/T4"},
					}}},
				},
			},
			nodes: []corev1.Node{withSwap(goldenNode(map[string]string{"node-role.kubernetes.io/worker": "",
				"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/iommu-enabled": "true",
				"feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/usb-ef_0b95.present": "true",
				"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}), 8<<30)},
			crds: []apiextensionsv1.CustomResourceDefinition{deschedulerSchema([]string{"LongLifecycle", "DevKubeVirtRelieveAndMigrate", "KubeVirtRelieveAndMigrate"}, true)},
		},
		"compact-amd-ocp417-no-swap": {
			hco: map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{
					"platform.kubevirt.io/enable-loadaware": "true", "platform.kubevirt.io/enable-higher-density": "true",
					"platform.kubevirt.io/enable-pci-passthrough": "true",
					"platform.kubevirt.io/disabled-resources":     "MachineConfig/90-worker-kubevirt-swap",
				}},
				"spec": map[string]any{"virtualization": map[string]any{"liveMigrationConfig": map[string]any{"parallelMigrationsPerCluster": int64(3)}}},
			},
			nodes: []corev1.Node{
				goldenNode(map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": "",
					"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/pci-0300_1002.present": "true",
					"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"}),
				goldenNode(map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}),
				goldenNode(map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}),
			},
			crds: []apiextensionsv1.CustomResourceDefinition{deschedulerSchema([]string{"AffinityAndTaints", "LongLifecycle"}, false)},
		},
	}
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			hco := &unstructured.Unstructured{Object: tc.hco}
			hco.SetAPIVersion("hco.kubevirt.io/v1")
			hco.SetKind("HyperConverged")
			hco.SetName("kubevirt-hyperconverged")
			rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, Nodes: tc.nodes, CRDs: tc.crds})
			rc.AssumeAllKinds = true
			var out bytes.Buffer
			for _, d := range ev.Preview(context.Background(), cat, rc, nil).Decisions {
				out.WriteString("---\n# asset: " + d.Asset.Name + " (" + string(d.Verdict) + ")\n")
				if d.Verdict != engine.VerdictIncluded {
					out.WriteString("# " + d.Reason + "\n")
					continue
				}
				y, err := yaml.Marshal(d.Desired.Object)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(y)
			}
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run 'go test ./pkg/engine -run TestRenderGoldens -update' to create it)", err)
			}
			if !bytes.Equal(want, out.Bytes()) {
				t.Fatalf("rendered output differs from %s; review and run with -update if intended:\n%s", path, out.String())
			}
		})
	}
}
