//go:build bench

package bench

// The cluster the scale run grows: realistic nodes and VMIs, and the
// changes it makes to them.

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const numaKey = "feature.node.kubernetes.io/memory-numa"

func nodeName(i int) string { return fmt.Sprintf("scale-node-%05d", i) }

// realNode is a worker as NFD and the kubelet leave it: 41 labels (of
// which the autopilot reads a few), 30 images, 5 conditions.
func realNode(i int) *corev1.Node {
	l := map[string]string{
		"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": nodeName(i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "node.openshift.io/os_id": "rhcos",
		"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3), "topology.kubernetes.io/region": "region-1",
		"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel", "feature.node.kubernetes.io/cpu-model.family": "6",
		"feature.node.kubernetes.io/cpu-model.id": "143", "feature.node.kubernetes.io/kernel-version.major": "5",
		"feature.node.kubernetes.io/iommu-enabled": "true", "feature.node.kubernetes.io/pci-0300_1a03.present": "true",
		"feature.node.kubernetes.io/system-os_release.ID": "rhcos", numaKey: []string{"true", "false"}[i%2],
	}
	for _, f := range []string{"AVX", "AVX2", "AVX512F", "AESNI", "FMA3", "SHA", "VMX", "X87", "ADX", "BMI1", "BMI2", "CMPXCHG8",
		"F16C", "FXSR", "MOVBE", "OSXSAVE", "POPCNT", "RDRAND", "RDSEED", "SSE4", "SSE42", "SSSE3", "XSAVE", "LAHF"} {
		l["feature.node.kubernetes.io/cpu-cpuid."+f] = "true"
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: l}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("250")}
	n.Status.Allocatable = n.Status.Capacity
	for k := 0; k < 30; k++ {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%064d", k), fmt.Sprintf("quay.io/openshift/image-%d:4.21", k)},
			SizeBytes: int64(300+k) << 20})
	}
	now := metav1.Now()
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady, "NetworkUnavailable"} {
		st := corev1.ConditionFalse
		if c == corev1.NodeReady {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: st, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady", Message: "kubelet is posting ready status"})
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.1", ContainerRuntimeVersion: "cri-o://1.34.1", KernelVersion: "5.14.0-570.el9_6.x86_64", OSImage: "Red Hat Enterprise Linux CoreOS 9.6", OperatingSystem: "linux", Architecture: "amd64"}
	return n
}

// runningVMI is a VM running on node i, live-migratable.
func runningVMI(i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}, "memory": map[string]any{"guest": "4Gi"}}},
		"status": map[string]any{"phase": "Running", "nodeName": nodeName(i),
			"conditions": []any{map[string]any{"type": "LiveMigratable", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}}},
	}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"})
	u.SetNamespace("default")
	u.SetName(fmt.Sprintf("vm-%05d", i))
	return u
}

func (b *bench) nodeLabel(i int, key string) string {
	n := &corev1.Node{}
	b.must(b.c.Get(b.ctx, client.ObjectKey{Name: nodeName(i)}, n))
	return n.Labels[key]
}

func (b *bench) patchLabels(i int, labels map[string]string) {
	js, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	b.must(b.c.Patch(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}, client.RawPatch(types.MergePatchType, js)))
}

// heartbeat is the kubelet's status update: the Ready condition's time.
func (b *bench) heartbeat(i int) {
	js, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "lastHeartbeatTime": time.Now().UTC().Format(time.RFC3339Nano)}}}})
	b.must(b.c.Status().Patch(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}, client.RawPatch(types.StrategicMergePatchType, js)))
}
