package rendercontext

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func node(name string, labels map[string]string, capacity corev1.ResourceList) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Capacity: capacity}}
}

func TestTopologyAndHardware(t *testing.T) {
	nodes := []corev1.Node{
		node("m0", map[string]string{labelMaster: "", labelWorker: ""}, nil),
		node("m1", map[string]string{labelControlPlane: "", labelWorker: "", nfd + "cpu-model.vendor_id": "AMD"}, nil),
		node("m2", map[string]string{labelMaster: "", labelWorker: "", nfd + "iommu-enabled": "true",
			nfd + "pci-0300_10de.present": "true", nfd + "cpu-model.vendor_id": "GenuineIntel"}, nil),
	}
	rc := New(Facts{Nodes: nodes})
	tp := rc.Topology
	if tp.Masters != 3 || tp.Workers != 0 || !tp.SchedulableMasters || !tp.Compact || tp.SingleNode {
		t.Fatalf("compact cluster misread: %+v", tp)
	}
	h := rc.Hardware
	if !h.IOMMU || !h.PCIDevices || !h.GPU || h.USBDevices || h.NUMA {
		t.Fatalf("hardware misread: %+v", h)
	}
	if len(h.CPUVendors) != 2 || h.CPUVendors[0] != "AMD" || h.CPUVendors[1] != "Intel" {
		t.Fatalf("vendors: %v", h.CPUVendors)
	}

	gpu := New(Facts{Nodes: []corev1.Node{node("sno", map[string]string{labelMaster: ""}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})}})
	if !gpu.Hardware.GPU || !gpu.Topology.SingleNode {
		t.Fatalf("gpu capacity / single node: %+v %+v", gpu.Hardware, gpu.Topology)
	}

	sched := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"mastersSchedulable": false}}}
	infra := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"controlPlaneTopology": "External"}}}
	ocp := New(Facts{Nodes: nodes, Scheduler: sched, Infrastructure: infra})
	if ocp.Topology.SchedulableMasters || !ocp.Topology.OpenShift || !ocp.Topology.ExternalControlPlane {
		t.Fatalf("OpenShift config must win over node labels: %+v", ocp.Topology)
	}
}

func TestHCOHelpers(t *testing.T) {
	rc := New(Facts{HCO: &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"featureGates":   []any{map[string]any{"name": "On"}, map[string]any{"name": "Off", "state": "Disabled"}},
			"virtualization": map[string]any{"ksmConfiguration": map[string]any{}, "x": "set"},
		},
	}}})
	if !rc.FeatureGateEnabled("On") || rc.FeatureGateEnabled("Off") || rc.FeatureGateEnabled("Absent") {
		t.Fatal("feature gates misread")
	}
	if !rc.HCOFieldUnconfigured("spec.virtualization.ksmConfiguration") || rc.HCOFieldUnconfigured("spec.virtualization.x") ||
		!rc.HCOFieldUnconfigured("spec.nothing.here") {
		t.Fatal("unconfigured fields misread")
	}
	if v, ok := rc.HCOAnnotation("a"); !ok || v != "b" {
		t.Fatal("annotation misread")
	}
	if !rc.KindAvailable(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Fatal("built-in kinds are available")
	}
	if rc.KindAvailable(schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "KubeDescheduler"}) {
		t.Fatal("a CRD kind without its CRD is not available")
	}
}
