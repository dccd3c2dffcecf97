package nodepool

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

func obj(kind, name, role string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}, "status": map[string]any{"x": "y"}}}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind(kind)
	u.SetName(name)
	u.SetResourceVersion("7")
	if role != "" {
		u.SetLabels(map[string]string{roleLabel: role})
	}
	return u
}

// HyperShift's rules (hypershift-operator/controllers/nodepool/config.go):
// MachineConfigs and KubeletConfigs only, workers only, as new objects.
func TestConfig(t *testing.T) {
	a := &catalog.Asset{Name: "a"}
	ds := []engine.Decision{
		{Asset: a, Verdict: engine.VerdictNodePool, Rendered: obj("MachineConfig", "99-worker-x", "worker")},
		{Asset: a, Verdict: engine.VerdictNodePool, Rendered: obj("MachineConfig", "99-master-x", "master")},
		{Asset: a, Verdict: engine.VerdictNodePool, Rendered: obj("KubeletConfig", "kubevirt-kubelet-worker", "")},
		{Asset: a, Verdict: engine.VerdictIncluded, Desired: obj("ConfigMap", "not-node-config", "")},
		{Asset: a, Verdict: engine.VerdictInactive, Rendered: obj("MachineConfig", "99-worker-off", "worker")},
	}
	res, err := Config(ds, "clusters")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Objects, ",") != "KubeletConfig/kubevirt-kubelet-worker,MachineConfig/99-worker-x" {
		t.Fatalf("objects %v", res.Objects)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "99-master-x") {
		t.Fatalf("skipped %v", res.Skipped)
	}
	c := res.ConfigMap.Data[ConfigKey]
	if strings.Count(c, "kind: ") != 2 || strings.Contains(c, "resourceVersion") || strings.Contains(c, "status") {
		t.Fatalf("config:\n%s", c)
	}
	if res.ConfigMap.Namespace != "clusters" || res.ConfigMap.Name != Name {
		t.Fatalf("%s/%s", res.ConfigMap.Namespace, res.ConfigMap.Name)
	}
}
