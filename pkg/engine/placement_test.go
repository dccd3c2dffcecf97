package engine_test

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// admits says whether the scheduler's own rules (k8s.io/component-helpers
// scheduling/corev1: GetRequiredNodeAffinity, FindMatchingUntoleratedTaint
// for NoSchedule and NoExecute taints, as the TaintToleration filter does)
// place pod on node.
func admits(pod *corev1.Pod, node *corev1.Node) bool {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return false
	}
	_, untolerated := schedulinghelper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !untolerated
}

// The privileged exporter goes only where VMs can run: judged by the
// scheduler's rules over generated HCO placements and nodes, it lands on
// no control-plane node unless masters are schedulable, and on every
// other node the HCO's placement admits (no VM node lost); with
// schedulable masters its placement is the HCO's.
func TestExporterPlacementLimitedToVMNodes(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := cat.Get("kubevirt-metrics-exporter-daemonset")
	if !ok {
		t.Fatal("no exporter asset")
	}
	r := render.New(assets.FS)
	tolerations := [][]any{nil, {map[string]any{"operator": "Exists"}},
		{map[string]any{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}},
		{map[string]any{"key": "example.com/vm", "operator": "Equal", "value": "true", "effect": "NoSchedule"}}}
	terms := [][]any{nil,
		{map[string]any{"matchExpressions": []any{map[string]any{"key": "example.com/vm", "operator": "In", "values": []any{"true"}}}}},
		{map[string]any{"matchExpressions": []any{map[string]any{"key": "example.com/vm", "operator": "Exists"}}},
			map[string]any{"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"cp-0", "w-1"}}}}}}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		placement := map[string]any{}
		if tl := tolerations[rnd.Intn(len(tolerations))]; tl != nil {
			placement["tolerations"] = tl
		}
		if tm := terms[rnd.Intn(len(terms))]; tm != nil {
			placement["affinity"] = map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": tm}}}
		}
		schedulableMasters := rnd.Intn(2) == 0
		var nodes []*corev1.Node
		for j := 0; j < 6; j++ {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", j), Labels: map[string]string{
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": ""}}}
			if rnd.Intn(2) == 0 {
				n.Labels["example.com/vm"] = "true"
				if rnd.Intn(2) == 0 {
					n.Spec.Taints = []corev1.Taint{{Key: "example.com/vm", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
				}
			}
			if j < 2 {
				n.Name = fmt.Sprintf("cp-%d", j)
				n.Labels["node-role.kubernetes.io/master"], n.Labels["node-role.kubernetes.io/control-plane"] = "", ""
				if !schedulableMasters {
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule})
				}
			}
			nodes = append(nodes, n)
		}
		hco := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"deployment": map[string]any{"nodePlacements": map[string]any{"workload": placement}}}}}
		hco.SetAPIVersion("hco.kubevirt.io/v1beta1")
		hco.SetKind("HyperConverged")
		hco.SetName(rendercontext.HCOName)
		scheduler := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"mastersSchedulable": schedulableMasters}}}
		scheduler.SetAPIVersion("config.openshift.io/v1")
		scheduler.SetKind("Scheduler")
		scheduler.SetName("cluster")
		var nodeList []corev1.Node
		for _, n := range nodes {
			nodeList = append(nodeList, *n)
		}
		rc := rendercontext.New(rendercontext.Facts{HCO: hco, Nodes: nodeList, Scheduler: scheduler,
			Observed: rendercontext.Observed{Images: map[string]string{"kubevirt-metrics-exporter": "quay.io/kubevirt/metrics-exporter:v1"}}})
		if rc.Topology.SchedulableMasters != schedulableMasters {
			t.Fatalf("case %d: topology reads mastersSchedulable %v", i, rc.Topology.SchedulableMasters)
		}
		u, err := r.Render(a.Path, rc, a.Params, nil)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		tmpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		// What the HCO's workload placement alone admits: where
		// virt-handler, and so VMs, run.
		hcoPod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": placement}, hcoPod); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		hcoPod.Spec.NodeSelector = pod.Spec.NodeSelector
		for _, n := range nodes {
			controlPlane := n.Name[:2] == "cp"
			got, vmNode := admits(pod, n), admits(hcoPod, n)
			switch {
			case controlPlane && !schedulableMasters && got:
				t.Fatalf("case %d: the privileged exporter lands on control-plane node %s (placement %v)", i, n.Name, placement)
			case vmNode && !got && (!controlPlane || schedulableMasters):
				t.Fatalf("case %d: node %s runs VMs but not the exporter (placement %v)", i, n.Name, placement)
			case got && !vmNode:
				t.Fatalf("case %d: the exporter lands on %s, where the HCO places no VM (placement %v)", i, n.Name, placement)
			}
		}
	}
}
