package rendercontext

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node cache keeps only the labels and capacities detection reads
// (NodeLabelRead, NodeResourceRead): facts from trimmed nodes must equal
// facts from whole ones, or a trimmed label would silently turn a fact off.
func TestTrimmedNodesGiveTheSameFacts(t *testing.T) {
	labels := map[string]string{
		labelWorker: "", labelMaster: "", labelControlPlane: "",
		nfd + "pci-10de.present": "true", nfd + "pci-0300_1af4.present": "true", nfd + "usb-ef_0b95.present": "true",
		nfd + "memory-numa": "true", nfd + "iommu-enabled": "true", nfd + "network-sriov.capable": "true",
		nfd + "cpu-model.vendor_id": "AuthenticAMD", "kubernetes.io/hostname": "n",
	}
	for i := 0; i < 40; i++ {
		labels[fmt.Sprintf("%scpu-cpuid.F%02d", nfd, i)] = "true"
	}
	full := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": resource.MustParse("64"), "nvidia.com/gpu": resource.MustParse("2")}}}
	trimmed := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}, Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}}}
	for k, v := range full.Labels {
		if NodeLabelRead(k) {
			trimmed.Labels[k] = v
		}
	}
	for r, q := range full.Status.Capacity {
		if NodeResourceRead(string(r)) {
			trimmed.Status.Capacity[r] = q
		}
	}
	if len(trimmed.Labels) != 10 {
		t.Errorf("kept %d labels, want the 10 detection reads: %v", len(trimmed.Labels), trimmed.Labels)
	}
	for _, nodes := range [][]corev1.Node{{full}, {full, *full.DeepCopy()}} {
		a := New(Facts{Nodes: nodes})
		var tn []corev1.Node
		for range nodes {
			tn = append(tn, trimmed)
		}
		b := New(Facts{Nodes: tn})
		if !reflect.DeepEqual(a.Hardware, b.Hardware) || !reflect.DeepEqual(a.Topology, b.Topology) {
			t.Errorf("facts differ after trimming:\n%+v %+v\n%+v %+v", a.Hardware, a.Topology, b.Hardware, b.Topology)
		}
	}
}
