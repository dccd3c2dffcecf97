// Package conformance proves every asset against the vendors' real CRD
// schemas: under a matrix of inputs each active asset is server-side applied
// to a real kube-apiserver holding the vendor CRDs, with zero rejections and
// zero pruned fields, and a second pass writes nothing (hot-loop guard).
package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rbac"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const ns = "openshift-cnv"

var vendorFiles = []string{
	"openshift/machineconfig-crd.yaml",
	"openshift/kubeletconfig-crd.yaml",
	"openshift/infrastructure-crd.yaml",
	"remediation/nodehealthchecks.remediation.medik8s.io.yaml",
	"operators/forklift.konveyor.io_forkliftcontrollers.yaml",
	"operators/metallb.io_metallbs.yaml",
	"observability/observability.openshift.io_uiplugins.yaml",
	"prometheus/monitoring.coreos.com_prometheusrules.yaml",
	"logging/loki.grafana.com_lokistacks.yaml",
	"logging/observability.openshift.io_clusterlogforwarders.yaml",
	"remediation/fenceagentsremediationtemplates.fence-agents-remediation.medik8s.io.yaml",
	"remediation/storagebasedremediationconfigs.storage-based-remediation.medik8s.io.yaml",
	"storage/cdi.kubevirt.io_storageprofiles.yaml",
	"inflightoperations/ifo.kubevirt.io_operationrulesets.yaml",
	"observability/perses.dev_persesdashboards.yaml",
	"observability/perses.dev_persesdatasources.yaml",
	"prometheus/monitoring.coreos.com_podmonitors.yaml",
	"openshift/securitycontextconstraints-crd.yaml",
	"openshift/0000_80_machine-config_01_machineconfigurations.crd.yaml",
}

// HCO inputs: annotations and spec of the HyperConverged object.
type hcoInput struct {
	name        string
	annotations map[string]string
	spec        map[string]any
}

var hcoInputs = []hcoInput{
	{name: "defaults"},
	{
		name: "everything-on",
		annotations: map[string]string{
			"platform.kubevirt.io/enable-loadaware":            "true",
			"platform.kubevirt.io/enable-pci-passthrough":      "true",
			"platform.kubevirt.io/enable-vfio-assignment":      "true",
			"platform.kubevirt.io/enable-usb-passthrough":      "true",
			"platform.kubevirt.io/enable-higher-density":       "true",
			"platform.kubevirt.io/enable-aaq":                  "true",
			"platform.kubevirt.io/enable-logging":              "true",
			"platform.kubevirt.io/enable-audit-logging":        "true",
			"platform.kubevirt.io/enable-node-remediation":     "true",
			"platform.kubevirt.io/enable-sbr-detection":        "true",
			"platform.kubevirt.io/enable-in-flight-operations": "true",
		},
		spec: map[string]any{
			"featureGates": []any{map[string]any{"name": "CPUManager", "state": "Enabled"}},
			"virtualization": map[string]any{
				"liveMigrationConfig": map[string]any{"parallelMigrationsPerCluster": int64(12), "parallelOutboundMigrationsPerNode": int64(4)},
				"permittedHostDevices": map[string]any{"pciHostDevices": []any{
					map[string]any{"pciDeviceSelector": "10DE:1EB8", "resourceName": "nvidia.com/TU104GL_Tesla_T4"},
					map[string]any{"pciDeviceSelector": "8086:0D5C", "resourceName": "intel.com/qat", "externalResourceProvider": true},
				}},
			},
		},
	},
	{
		// Node tuning where the HCO does not run KSM itself (no higher density).
		name: "node-tuning",
		annotations: map[string]string{
			"platform.kubevirt.io/enable-thp-tuning":                   "true",
			"platform.kubevirt.io/enable-thp-tuning-kernelcore":        "true",
			"platform.kubevirt.io/enable-scsi-persistent-reservations": "true",
			"platform.kubevirt.io/enable-ksm-zero-only":                "true",
			"platform.kubevirt.io/enable-vm-drain-shutdown-inhibitor":  "true",
			"platform.kubevirt.io/enable-kubevirt-metrics-exporter":    "true",
		},
	},
	{
		name: "overrides-and-exclusions",
		annotations: map[string]string{
			"platform.kubevirt.io/enable-higher-density": "true",
			"platform.kubevirt.io/enable-loadaware":      "true",
			annotations.DisabledResources:                "MachineConfig/90-worker-kubevirt-swap",
		},
		spec: map[string]any{"virtualization": map[string]any{"liveMigrationConfig": map[string]any{"parallelMigrationsPerCluster": int64(3)}}},
	},
}

type hwInput struct {
	name  string
	nodes []corev1.Node
}

func node(name string, labels map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

var hwInputs = []hwInput{
	{name: "plain-workers", nodes: []corev1.Node{
		node("m0", map[string]string{"node-role.kubernetes.io/master": ""}),
		node("w0", map[string]string{"node-role.kubernetes.io/worker": ""}),
	}},
	{name: "intel-numa-iommu-pci-usb", nodes: []corev1.Node{
		node("w0", map[string]string{"node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/memory-numa": "true",
			"feature.node.kubernetes.io/iommu-enabled": "true", "feature.node.kubernetes.io/pci-10de.present": "true",
			"feature.node.kubernetes.io/usb-ef_0b95_1790.present": "true", "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}),
	}},
	{name: "compact-amd", nodes: []corev1.Node{
		node("m0", map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": "",
			"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/iommu-enabled": "true",
			"feature.node.kubernetes.io/pci-0300_1002.present": "true", "feature.node.kubernetes.io/cpu-model.vendor_id": "AMD",
			"feature.node.kubernetes.io/usb-ef_0b95_1790.present": "true"}),
		node("m1", map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}),
		node("m2", map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}),
	}},
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	crd, err := testenv.ReadCRD(path)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func TestVendorSchemaConformance(t *testing.T) {
	vendor := os.Getenv("VENDOR_CRDS")
	if vendor == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("VENDOR_CRDS is unset under CI: .ci/run sets it to ../shared/crds")
		}
		testenv.NotRun(t.Name(), "needs the vendors' CRDs (VENDOR_CRDS)")
		t.Skip("VENDOR_CRDS is unset: set it to a folder of the vendors' real CRDs (CI: ../shared/crds) to prove every asset against them")
	}
	// The operand image, as OLM sets it from the bundle.
	t.Setenv("RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER", "quay.io/kubevirt/kubevirt-metrics-exporter@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	hco, err := testenv.ReadVendorHCO(vendor)
	if err != nil {
		t.Fatal(err)
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{hco}
	for _, f := range vendorFiles {
		crds = append(crds, readCRD(t, filepath.Join(vendor, f)))
	}
	env, cfg, c, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	for _, n := range []string{ns, "openshift-mtv", "metallb-system", "openshift-kube-descheduler-operator", "openshift-logging", "openshift-workload-availability", "openshift-monitoring"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	clusterObjects(t, ctx, c)
	hcoObj := &unstructured.Unstructured{}
	hcoObj.SetGroupVersionKind(rendercontext.HCOGVK)
	hcoObj.SetNamespace(ns)
	hcoObj.SetName(rendercontext.HCOName)
	if err := c.Create(ctx, hcoObj); err != nil {
		t.Fatal(err)
	}

	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	covered := map[string]bool{}
	for _, release := range []string{"4-17", "4-19", "4-21"} {
		kd := readCRD(t, filepath.Join(vendor, "descheduler-versions", "kube-descheduler-operator-"+release+".crd.yaml"))
		c := installCRD(t, cfg, kd)
		for _, h := range hcoInputs {
			setHCO(t, ctx, c, h)
			for _, hw := range hwInputs {
				name := fmt.Sprintf("descheduler-%s/%s/%s", release, h.name, hw.name)
				t.Run(name, func(t *testing.T) {
					for asset := range pass(t, ctx, c, cat, ev, hw.nodes) {
						covered[asset] = true
					}
				})
			}
		}
		if release == "4-21" {
			// A cluster whose kubelets read the drop-in folder (MCO's kubelet.service
			// of OCP 5.0 for both roles): the kubelet settings as MachineConfigs.
			units := kubeletUnits(t, ctx, c)
			for _, h := range hcoInputs {
				setHCO(t, ctx, c, h)
				for _, hw := range hwInputs {
					t.Run(fmt.Sprintf("kubelet-drop-ins/%s/%s", h.name, hw.name), func(t *testing.T) {
						for asset := range pass(t, ctx, c, cat, ev, hw.nodes) {
							covered[asset] = true
						}
					})
				}
			}
			for _, u := range units {
				if err := c.Delete(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
		}
		removeCRD(t, ctx, c, kd.Name)
	}
	for _, a := range cat.Assets {
		if !covered[a.Name] {
			t.Errorf("asset %s was never active in the matrix: add an input that turns it on", a.Name)
		}
	}
	checkRBACResources(t, cfg, cat)
}

// checkRBACResources proves the generated role names each managed kind's
// real resource (the plural the API server maps it to).
func checkRBACResources(t *testing.T, cfg *rest.Config, cat *catalog.Catalog) {
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(assets.FS)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.RenderOrHead(a.Path, &rendercontext.RenderContext{Namespace: ns}, a.Params)
		if err != nil {
			t.Fatal(err)
		}
		gvk := u.GroupVersionKind()
		if gvk.Kind == "KubeDescheduler" {
			continue // its CRD was removed at the end of the matrix
		}
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("asset %s: %v", a.Name, err)
		}
		if got := rbac.Resource(gvk.Kind); got != m.Resource.Resource {
			t.Errorf("rbac.Resource(%s) = %s, the API server says %s: add it to the irregular plurals", gvk.Kind, got, m.Resource.Resource)
		}
	}
}

// pass runs two reconcile passes the way the controller does and returns
// the assets that were applied.
func pass(t *testing.T, ctx context.Context, c client.Client, cat *catalog.Catalog, ev *engine.Evaluator, nodes []corev1.Node) map[string]bool {
	live := directLive{c}
	applied := map[string]bool{}
	for round := 1; round <= 2; round++ {
		rc := context0(t, ctx, c, nodes, rendercontext.Reads(cat))
		syncer := &apply.Syncer{Client: c, Gate: gate.New(gate.Config{Throttle: throttle.Config{Burst: 100, Refill: time.Second}, SettlePeriod: -1, Catalog: cat})}
		for i := range cat.Assets {
			a := &cat.Assets[i]
			d := ev.Evaluate(ctx, a, rc, live)
			switch d.Verdict {
			case engine.VerdictIncluded:
			case engine.VerdictInactive, engine.VerdictExcluded, engine.VerdictRetained:
				continue
			default:
				t.Fatalf("round %d: asset %s: %s: %s", round, a.Name, d.Verdict, d.Reason)
			}
			var before string
			if d.Live != nil {
				before = d.Live.GetResourceVersion()
			}
			if round == 2 {
				// Hot-loop guard: the local verdict alone must see no drift.
				if diff := drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure); len(diff) != 0 {
					t.Errorf("asset %s drifts right after its own apply (a hot loop): %v", a.Name, diff)
				}
			}
			res := syncer.Sync(ctx, rc, &d)
			if res.Err != nil || (res.Outcome != engine.Applied && res.Outcome != engine.Unchanged) {
				t.Fatalf("round %d: asset %s rejected: %s %s", round, a.Name, res.Outcome, res.Reason)
			}
			if round == 2 {
				if res.Outcome != engine.Unchanged {
					t.Errorf("asset %s wrote again on the second pass: %s", a.Name, res.Reason)
				}
				after := getLive(t, ctx, c, d.Desired)
				if after.GetResourceVersion() != before {
					t.Errorf("asset %s: resourceVersion moved on the second pass (%s -> %s)", a.Name, before, after.GetResourceVersion())
				}
				continue
			}
			applied[a.Name] = true
			// Zero pruned fields: everything sent came back.
			back := getLive(t, ctx, c, d.Desired)
			if pruned := drift.Diff(d.Desired, back, annotations.FieldManager, d.Structure); len(pruned) != 0 {
				t.Errorf("asset %s: the API server pruned or changed %v", a.Name, pruned)
			}
			if a.ReconcileOrder == 0 {
				rc = rc.WithHCO(back)
			}
		}
	}
	return applied
}

// clusterObjects creates what the assets read on an OpenShift cluster with
// the operators installed: the Infrastructure object, a default
// StorageClass, an RWX StorageProfile, the admin's fence template and the
// descheduler operator's recording rules.
func clusterObjects(t *testing.T, ctx context.Context, c client.Client) {
	objs := []string{`
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
spec: {}`, `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner`, `
apiVersion: cdi.kubevirt.io/v1beta1
kind: StorageProfile
metadata: {name: nfs}
spec: {}`, `
apiVersion: fence-agents-remediation.medik8s.io/v1alpha1
kind: FenceAgentsRemediationTemplate
metadata: {name: fenceagentsremediationtemplate-default, namespace: openshift-workload-availability}
spec:
  template:
    spec:
      agent: fence_ipmilan
      sharedparameters: {--lanplus: ""}
      nodeparameters:
        --ipport: {w0: "6230"}`, `
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: descheduler-rules, namespace: openshift-kube-descheduler-operator}
spec:
  groups:
    - name: descheduler
      rules:
        - record: descheduler:combined_utilization_and_pressure:avg1m
          expr: vector(1)
        - record: descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m
          expr: vector(1)`}
	for _, y := range objs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	// CDI writes what a class offers into the profile's status.
	sp := &unstructured.Unstructured{}
	sp.SetGroupVersionKind(rendercontext.StorageProfileGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: "nfs"}, sp); err != nil {
		t.Fatal(err)
	}
	sp.Object["status"] = map[string]any{"storageClass": "nfs", "claimPropertySets": []any{
		map[string]any{"accessModes": []any{"ReadWriteMany"}, "volumeMode": "Filesystem"}}}
	if err := c.Status().Update(ctx, sp); err != nil {
		t.Fatal(err)
	}
}

// context0 builds the render context from the API server, with the given nodes.
func context0(t *testing.T, ctx context.Context, c client.Client, nodes []corev1.Node, reads []rendercontext.ObjectKey) *rendercontext.RenderContext {
	f, err := gather.Facts(ctx, c, ns, reads)
	if err != nil {
		t.Fatal(err)
	}
	f.Nodes = nodes
	f.Images = rendercontext.ImagesFromEnv(os.Environ()) // as the controller takes them
	return rendercontext.New(f)
}

type directLive struct{ c client.Client }

func (d directLive) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := d.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

func getLive(t *testing.T, ctx context.Context, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	u, err := directLive{c}.Live(ctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
	if err != nil || u == nil {
		t.Fatalf("read back %s: %v", engine.ObjectKey(obj), err)
	}
	return u
}

func setHCO(t *testing.T, ctx context.Context, c client.Client, h hcoInput) {
	u, err := directLive{c}.Live(ctx, rendercontext.HCOGVK, ns, rendercontext.HCOName)
	if err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(h.annotations)
	spec := map[string]any{}
	for k, v := range h.spec {
		spec[k] = v
	}
	u.Object["spec"] = spec
	if err := c.Update(ctx, u, client.FieldOwner("hco-operator")); err != nil {
		t.Fatalf("set HCO %s: %v", h.name, err)
	}
}

// installCRD installs crd, waits until it is served and returns a client
// whose REST mapper has seen it.
func installCRD(t *testing.T, cfg *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) client.Client {
	crds := []*apiextensionsv1.CustomResourceDefinition{crd.DeepCopy()}
	if err := envtest.CreateCRDs(cfg, crds); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("CRD %s not served: %v", crd.Name, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func removeCRD(t *testing.T, ctx context.Context, c client.Client, name string) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})), nil
	})
	if err != nil {
		t.Fatalf("CRD %s not deleted: %v", name, err)
	}
}

// kubeletUnits creates the MachineConfigs MCO renders each role's
// kubelet.service into, with the drop-in folder on its command line.
func kubeletUnits(t *testing.T, ctx context.Context, c client.Client) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, role := range []string{"master", "worker"} {
		ref := catalog.KubeletUnitRead(role)
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"config": map[string]any{
			"ignition": map[string]any{"version": "3.4.0"},
			"systemd": map[string]any{"units": []any{map[string]any{"name": "kubelet.service", "enabled": true,
				"contents": "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf " + rendercontext.KubeletConfigDirFlag + "\n"}}},
		}}}}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		u.SetName(ref.Name)
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}
