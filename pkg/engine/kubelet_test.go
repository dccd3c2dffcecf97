package engine_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/reservation"
)

// Every combination of switches, feature gates, hardware and topology
// renders KubeletConfigs a node accepts: at most one per pool (MCO lets the
// newest replace the others' kubelet.conf) and memory reservations that
// satisfy the kubelet's memory manager check.
func TestKubeletConfigsANodeAccepts(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	worker := map[string]string{"node-role.kubernetes.io/worker": ""}
	master := map[string]string{"node-role.kubernetes.io/master": ""}
	both := map[string]string{"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": ""}
	numa := map[string]string{"node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/memory-numa": "true",
		"feature.node.kubernetes.io/iommu-enabled": "true", "feature.node.kubernetes.io/pci-10de.present": "true",
		"feature.node.kubernetes.io/cpu-model.vendor_id": "AMD"}
	topologies := map[string][]map[string]string{
		"standard": {master, master, master, worker, worker},
		"compact":  {both, both, both},
		"sno":      {both},
		"hardware": {master, numa, numa},
	}
	switches := []string{"", "enable-higher-density", "enable-pci-passthrough", "enable-loadaware"}
	checked := 0
	for topo, labels := range topologies {
		var nodes []corev1.Node
		for _, l := range labels {
			nodes = append(nodes, goldenNode(l))
		}
		for _, gate := range []bool{false, true} {
			for _, sw := range switches {
				hco := &unstructured.Unstructured{Object: map[string]any{}}
				hco.SetAPIVersion("hco.kubevirt.io/v1")
				hco.SetKind("HyperConverged")
				hco.SetName("kubevirt-hyperconverged")
				if sw != "" {
					hco.SetAnnotations(map[string]string{"platform.kubevirt.io/" + sw: "true"})
				}
				if gate {
					hco.Object["spec"] = map[string]any{"featureGates": []any{map[string]any{"name": "CPUManager"}}}
				}
				rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, Nodes: nodes})
				rc.AssumeAllKinds = true
				perPool := map[string]string{}
				for _, d := range ev.Preview(context.Background(), cat, rc, nil).Decisions {
					if d.Verdict != engine.VerdictIncluded || d.Desired.GetKind() != "KubeletConfig" {
						continue
					}
					where := fmt.Sprintf("%s, CPUManager=%v, switch %q: %s", topo, gate, sw, d.Desired.GetName())
					sel, _, _ := unstructured.NestedStringMap(d.Desired.Object, "spec", "machineConfigPoolSelector", "matchLabels")
					for pool := range sel {
						if other, dup := perPool[pool]; dup {
							t.Errorf("%s: a second KubeletConfig for pool label %s (also %s)", where, pool, other)
						}
						perPool[pool] = d.Desired.GetName()
					}
					spec, _, _ := unstructured.NestedMap(d.Desired.Object, "spec")
					if err := reservation.Check(spec); err != nil {
						t.Errorf("%s: %v", where, err)
					}
					if _, static := spec["kubeletConfig"].(map[string]any)["memoryManagerPolicy"]; static != gate {
						t.Errorf("%s: memory manager Static is set %v, the CPUManager gate is %v", where, static, gate)
					}
					checked++
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d KubeletConfigs checked: the matrix lost its kubelet assets", checked)
	}
}

// A patch that breaks the kubelet's memory arithmetic is refused (Invalid,
// reason unsafe) and the object left as it is: a pool whose kubelets cannot
// start is an outage.
func TestUnsafeKubeletPatchIsRefused(t *testing.T) {
	ev, cat, rc := setup(t, nil)
	rc.HCO["spec"] = map[string]any{"featureGates": []any{map[string]any{"name": "CPUManager"}}}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(rendercontext.KubeletConfigGVK)
	live.SetName("kubevirt-kubelet-worker")
	a, _ := cat.Get("kubelet-worker")
	for patch, want := range map[string]engine.Verdict{
		`[{"op":"replace","path":"/spec/kubeletConfig/kubeReserved/memory","value":"2Gi"}]`: engine.VerdictInvalid,
		`[{"op":"replace","path":"/spec/kubeletConfig/maxPods","value":300}]`:               engine.VerdictIncluded,
	} {
		live.SetAnnotations(map[string]string{"platform.kubevirt.io/patch": patch})
		d := ev.Evaluate(context.Background(), a, rc, liveMap{"KubeletConfig//kubevirt-kubelet-worker": live})
		if d.Verdict != want || (want == engine.VerdictInvalid && d.InvalidReason != engine.Unsafe) {
			t.Errorf("%s: %s (%s) %s, want %s", patch, d.Verdict, d.InvalidReason, d.Reason, want)
		}
	}
}
