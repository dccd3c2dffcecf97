package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// vendorDir is the folder of real vendor CRDs (CI: ../shared/crds), or "".
func vendorDir() string { return os.Getenv("VENDOR_CRDS") }

func repoRoot() string { return testenv.RepoRoot() }

func readCRD(path string) *apiextensionsv1.CustomResourceDefinition {
	crd, err := testenv.ReadCRD(path)
	Expect(err).NotTo(HaveOccurred())
	return crd
}

// baseCRDs are installed with the API server: HCO, MachineConfig, Scheduler
// (and with vendor CRDs, Infrastructure and KubeletConfig too).
func baseCRDs() []*apiextensionsv1.CustomResourceDefinition {
	local := filepath.Join(repoRoot(), "test", "crds")
	if vendorDir() == "" {
		return []*apiextensionsv1.CustomResourceDefinition{
			readCRD(filepath.Join(local, "hyperconverged.yaml")),
			readCRD(filepath.Join(local, "machineconfig.yaml")),
			readCRD(filepath.Join(local, "scheduler.yaml")),
		}
	}
	hco, err := testenv.ReadVendorHCO(vendorDir())
	Expect(err).NotTo(HaveOccurred())
	return []*apiextensionsv1.CustomResourceDefinition{
		hco,
		readCRD(filepath.Join(vendorDir(), "openshift", "machineconfig-crd.yaml")),
		readCRD(filepath.Join(vendorDir(), "openshift", "kubeletconfig-crd.yaml")),
		readCRD(filepath.Join(vendorDir(), "openshift", "infrastructure-crd.yaml")),
		readCRD(filepath.Join(local, "scheduler.yaml")),
	}
}

// deschedulerCRD returns the KubeDescheduler CRD of an OCP release: the
// vendor's file, or a minimal one with the same profile enum and limits.
func deschedulerCRD(release string) *apiextensionsv1.CustomResourceDefinition {
	if vendorDir() != "" {
		return readCRD(filepath.Join(vendorDir(), "descheduler-versions", fmt.Sprintf("kube-descheduler-operator-%s.crd.yaml", release)))
	}
	profiles := []string{"AffinityAndTaints", "TopologyAndDuplicates", "LifecycleAndUtilization", "DevPreviewLongLifecycle",
		"LongLifecycle", "SoftTopologyAndDuplicates", "EvictPodsWithLocalStorage", "EvictPodsWithPVC", "CompactAndScale"}
	limits := map[string]apiextensionsv1.JSONSchemaProps{"total": {Type: "integer", Format: "int32"}}
	custom := map[string]apiextensionsv1.JSONSchemaProps{"devEnableEvictionsInBackground": {Type: "boolean"}}
	switch release {
	case "4-21":
		profiles = append(profiles, "DevKubeVirtRelieveAndMigrate", "KubeVirtRelieveAndMigrate")
		limits["node"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
		custom["devDeviationThresholds"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	case "4-19":
		profiles = append(profiles, "DevKubeVirtRelieveAndMigrate")
		custom["devDeviationThresholds"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	enum := make([]apiextensionsv1.JSON, 0, len(profiles))
	for _, p := range profiles {
		enum = append(enum, apiextensionsv1.JSON{Raw: []byte(`"` + p + `"`)})
	}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"managementState":             {Type: "string"},
		"mode":                        {Type: "string"},
		"deschedulingIntervalSeconds": {Type: "integer", Format: "int32"},
		"profiles":                    {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Enum: enum}}},
		"profileCustomizations":       {Type: "object", Properties: custom},
		"evictionLimits":              {Type: "object", Properties: limits},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "kubedeschedulers.operator.openshift.io"
	crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "operator.openshift.io", Scope: apiextensionsv1.NamespaceScoped,
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "KubeDescheduler", ListKind: "KubeDeschedulerList", Plural: "kubedeschedulers", Singular: "kubedescheduler"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": {Type: "object", XPreserveUnknownFields: boolPtr(true)}},
			}},
		}},
	}
	return crd
}

func boolPtr(b bool) *bool { return &b }

// installCRD creates crd and waits until it is established.
func installCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) {
	Expect(envtest.CreateCRDs(cfg, []*apiextensionsv1.CustomResourceDefinition{crd.DeepCopy()})).To(Succeed())
	Expect(envtest.WaitForCRDs(cfg, []*apiextensionsv1.CustomResourceDefinition{crd}, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 100 * time.Millisecond})).To(Succeed())
}

// removeCRD deletes the CRD by name and waits until it is gone.
func removeCRD(ctx context.Context, name string) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, crd))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}))
	}).Should(BeTrue(), "CRD %s to be deleted", name)
}
