// Package hosted checks what 'render --output nodepool' writes for a hosted
// control plane's guest against HyperShift's own NodePool CRD on a real API
// server: the ConfigMap is accepted, and a NodePool that references it.
package hosted

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodepool"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

func TestNodePoolTakesTheRender(t *testing.T) {
	vendor := os.Getenv("VENDOR_CRDS")
	if vendor == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("VENDOR_CRDS is unset under CI: the NodePool needs HyperShift's CRD")
		}
		testenv.NotRun(t.Name(), "needs HyperShift's NodePool CRD (VENDOR_CRDS)")
		t.Skip("VENDOR_CRDS unset")
	}
	crd, err := testenv.ReadCRD(filepath.Join(vendor, "hypershift", "nodepools-Default.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objs := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(objs, []byte("apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata:\n  name: cluster\nstatus:\n  controlPlaneTopology: External\n  platformStatus:\n    type: KubeVirt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The guest's APIs: no MachineConfig or KubeletConfig.
	var out, errOut bytes.Buffer
	samples := filepath.Join(testenv.RepoRoot(), "config", "samples")
	code := cli.Render([]string{"--hco-file", filepath.Join(samples, "hco.yaml"), "--nodes-file", filepath.Join(samples, "nodes.yaml"),
		"--objects-file", objs, "--crds", filepath.Join(testenv.RepoRoot(), "test", "crds", "scheduler.yaml"), "-o", "nodepool", "--nodepool-namespace", "clusters"}, &out, &errOut)
	if code != cli.ExitOK {
		t.Fatalf("render -o nodepool: exit %d\n%s", code, errOut.String())
	}
	var cm *unstructured.Unstructured
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &u.Object) == nil && u.GetKind() == "ConfigMap" {
			cm = u
		}
	}
	if cm == nil {
		t.Fatalf("no ConfigMap:\n%s", out.String())
	}

	env, _, c, err := testenv.Start([]*apiextensionsv1.CustomResourceDefinition{crd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("the ConfigMap: %v", err)
	}
	np := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName": "guest", "replicas": int64(2),
		"management": map[string]any{"upgradeType": "Replace"},
		"platform":   map[string]any{"type": "KubeVirt"},
		"release":    map[string]any{"image": "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"},
	}}}
	np.SetAPIVersion("hypershift.openshift.io/v1beta1")
	np.SetKind("NodePool")
	np.SetNamespace("clusters")
	np.SetName("guest-workers")
	if err := c.Create(ctx, np); err != nil {
		t.Fatalf("a NodePool: %v", err)
	}
	// The reference the output shows for a NodePool without spec.config,
	// then the one for a NodePool with some.
	first := `[{"op":"add","path":"/spec/config","value":[{"name":"` + nodepool.Name + `"}]}]`
	if !strings.Contains(out.String(), first) || !strings.Contains(out.String(), nodepool.Patch()) {
		t.Fatalf("the output does not show both references:\n%s", out.String())
	}
	if err := c.Patch(ctx, np, client.RawPatch(types.JSONPatchType, []byte(first))); err != nil {
		t.Fatalf("NodePool refuses the reference: %v", err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "admin-tuning", Namespace: "clusters"}, Data: map[string]string{"config": ""}}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, np, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/config/-","value":{"name":"admin-tuning"}}]`))); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(np.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	refs, _, _ := unstructured.NestedSlice(got.Object, "spec", "config")
	if len(refs) != 2 {
		t.Fatalf("spec.config: %v", refs)
	}
}
