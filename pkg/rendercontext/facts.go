package rendercontext

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// Facts are the raw inputs of a RenderContext.
type Facts struct {
	Namespace      string
	HCO            *unstructured.Unstructured
	Infrastructure *unstructured.Unstructured // config.openshift.io/v1 Infrastructure "cluster", if any
	Scheduler      *unstructured.Unstructured // config.openshift.io/v1 Scheduler "cluster", if any
	// Nodes are the nodes as listed (offline, a live client); NodeSet
	// their classes as the controller's node index keeps them from node
	// events (nil: classed from Nodes).
	Nodes   []corev1.Node
	NodeSet *NodeSet
	CRDs    []apiextensionsv1.CustomResourceDefinition
	// AssumeAllKinds: no CRD list was given (an offline render without
	// CRD files), so every kind counts as served.
	AssumeAllKinds bool
	Observed
}

// Observed are the cluster objects and settings templates read beyond the
// HCO, nodes and CRDs; Facts gathers them and a RenderContext carries them
// as they are.
type Observed struct {
	// Peers are every object of each exclusive kind (PeerKinds) whose CRD
	// is installed, the autopilot's and others', by kind; PeersErr names the
	// kinds that could not be read (a clash cannot be ruled out).
	Peers    map[schema.GroupVersionKind][]*unstructured.Unstructured
	PeersErr map[schema.GroupVersionKind]error
	// Pools are every MachineConfigPool (labels and selectors: which pool a
	// node is in, which pools a KubeletConfig selects); PoolsErr says they
	// could not be read (then no pool's nodes can be told).
	Pools    []*unstructured.Unstructured
	PoolsErr error
	// StorageProfiles are CDI's StorageProfiles (one per storage class),
	// StorageProfilesErr says they could not be read.
	StorageProfiles    []*unstructured.Unstructured
	StorageProfilesErr error
	// StorageClasses are the cluster's storage classes (built in, a few).
	StorageClasses    []*unstructured.Unstructured
	StorageClassesErr error
	// Objects are the objects assets declare under reads, by ObjectKey;
	// a key with a nil value was read and is absent. ObjectErrs holds the
	// reads that failed (unknown, never absent).
	Objects    map[ObjectKey]*unstructured.Unstructured
	ObjectErrs map[ObjectKey]error
	// Structures are how each CRD's versions merge maps and lists, by CRD
	// name then version, summarized where the CRDs were read without their
	// schemas (the controller's cache); absent, they are read from the
	// CRD's own schema.
	Structures map[string]map[string]structure.Structure
	// Images are the operand images, by name (RELATED_IMAGE_FOO_BAR is
	// foo-bar), as the operator's deployment sets them.
	Images map[string]string
	// Shipped is the Deployment of the autopilot OpenShift Virtualization
	// ships (pkg/shipped) in the HCO's namespace, nil when there is none;
	// ShippedErr says it could not be read (then nothing is written).
	Shipped    *unstructured.Unstructured
	ShippedErr error
}

const (
	labelMaster       = "node-role.kubernetes.io/master"
	labelControlPlane = "node-role.kubernetes.io/control-plane"
	labelWorker       = "node-role.kubernetes.io/worker"
	nfd               = "feature.node.kubernetes.io/"
)

// New builds a RenderContext from facts. It never fails: a missing fact
// leaves its zero value, so an asset that needs it stays inactive.
func New(f Facts) *RenderContext {
	rc := &RenderContext{Namespace: f.Namespace, CRDs: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	rc.setHCO(f.HCO)
	rc.AssumeAllKinds = f.AssumeAllKinds
	for i := range f.CRDs {
		rc.CRDs[f.CRDs[i].Name] = &f.CRDs[i]
	}
	rc.Observed = f.Observed
	if f.NodeSet != nil {
		rc.nodes = *f.NodeSet
	} else {
		rc.nodes = NodesOf(f.Nodes)
	}
	rc.Topology = topology(f, rc.nodes)
	rc.classHW = make([]Hardware, len(rc.nodes.Classes))
	for i := range rc.nodes.Classes {
		rc.classHW[i] = classHardware(&rc.nodes.Classes[i])
	}
	rc.Hardware = union(rc.classHW, nil)
	rc.poolHW = &poolMemo{m: map[string]memoHW{}}
	return rc
}

// roleCounts are the node counts topology reads.
type roleCounts struct{ masters, workers, schedulableMasters, nodes int }

func nodeTopology(s NodeSet) roleCounts {
	var t roleCounts
	for i := range s.Classes {
		c := &s.Classes[i]
		_, m := c.Labels[labelMaster]
		_, cp := c.Labels[labelControlPlane]
		_, w := c.Labels[labelWorker]
		if m || cp {
			t.masters += c.Count
			if w {
				t.schedulableMasters += c.Count
			}
		} else {
			t.workers += c.Count
		}
		t.nodes += c.Count
	}
	return t
}

// SingleReplicaTopology is the control plane topology of a single-node
// cluster (openshift/api config/v1 types_infrastructure.go TopologyMode).
const SingleReplicaTopology = "SingleReplica"

// ControlPlaneTopology is an Infrastructure object's
// status.controlPlaneTopology; "" when it says none.
func ControlPlaneTopology(infra *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(infra.Object, "status", "controlPlaneTopology")
	return t
}

func topology(f Facts, s NodeSet) Topology {
	var t Topology
	counts := nodeTopology(s)
	t.Masters, t.Workers, t.Nodes = counts.masters, counts.workers, counts.nodes
	schedulableMasterNodes := counts.schedulableMasters
	if f.Infrastructure != nil {
		t.OpenShift = true
		t.ControlPlaneTopology = ControlPlaneTopology(f.Infrastructure)
		t.Platform, _, _ = unstructured.NestedString(f.Infrastructure.Object, "status", "platformStatus", "type")
	}
	if f.Scheduler != nil {
		t.SchedulableMasters, _, _ = unstructured.NestedBool(f.Scheduler.Object, "spec", "mastersSchedulable")
	} else {
		// Without OpenShift's Scheduler object, masters that also carry the
		// worker role are schedulable.
		t.SchedulableMasters = schedulableMasterNodes > 0
	}
	t.ExternalControlPlane = t.ControlPlaneTopology == "External"
	t.SingleNode = t.ControlPlaneTopology == SingleReplicaTopology || (t.Nodes == 1 && t.Masters == 1)
	// Compact: every node is a control-plane node that also runs workloads.
	t.Compact = t.Masters > 0 && t.Workers == 0 && t.SchedulableMasters && !t.SingleNode
	if t.SingleNode {
		t.SchedulableMasters = true
	}
	return t
}

// classHardware is what hardware detection reads from one class's nodes.
func classHardware(c *NodeClass) Hardware {
	var h Hardware
	for k, v := range c.Labels {
		if !strings.HasPrefix(k, nfd) {
			continue
		}
		feat := strings.TrimPrefix(k, nfd)
		switch {
		case strings.HasPrefix(feat, "pci-") && strings.HasSuffix(feat, ".present") && v == "true":
			h.PCIDevices = true
			// PCI class 03xx is a display controller.
			if strings.HasPrefix(feat, "pci-03") {
				h.GPU = true
			}
		case strings.HasPrefix(feat, "usb-") && strings.HasSuffix(feat, ".present") && v == "true":
			h.USBDevices = true
		case feat == "memory-numa" && v == "true":
			h.NUMA = true
		case feat == "iommu-enabled" && v == "true":
			h.IOMMU = true
		case feat == "network-sriov.capable" && v == "true":
			h.SRIOV = true
		case feat == "cpu-model.vendor_id":
			vendor := map[string]string{"Intel": "Intel", "GenuineIntel": "Intel", "AMD": "AMD", "AuthenticAMD": "AMD"}[v]
			if vendor != "" {
				h.CPUVendors = []string{vendor}
			}
		}
	}
	if c.GPUResource {
		h.GPU = true
	}
	return h
}

// union is the hardware of the classes in (nil: every class): a fact one
// node shows is the group's.
func union(classes []Hardware, in func(i int) bool) Hardware {
	var h Hardware
	for i, c := range classes {
		if in != nil && !in(i) {
			continue
		}
		h.PCIDevices = h.PCIDevices || c.PCIDevices
		h.NUMA = h.NUMA || c.NUMA
		h.IOMMU = h.IOMMU || c.IOMMU
		h.USBDevices = h.USBDevices || c.USBDevices
		h.GPU = h.GPU || c.GPU
		h.SRIOV = h.SRIOV || c.SRIOV
		for _, v := range c.CPUVendors {
			if !slices.Contains(h.CPUVendors, v) {
				h.CPUVendors = append(h.CPUVendors, v)
			}
		}
	}
	slices.Sort(h.CPUVendors)
	return h
}

// NodeLabelRead reports whether topology or hardware detection reads a node
// label: the cache keeps only these (a node carries dozens of NFD labels the
// autopilot never reads, and memory per node is what scales).
func NodeLabelRead(k string) bool {
	switch k {
	case labelMaster, labelControlPlane, labelWorker:
		return true
	}
	// Every role: MachineConfigPools select their nodes by it (custom
	// pools too), and a pool's facts come from its own nodes.
	if strings.HasPrefix(k, nodeRolePrefix) {
		return true
	}
	feat, ok := strings.CutPrefix(k, nfd)
	if !ok {
		return false
	}
	switch {
	case strings.HasPrefix(feat, "pci-") && strings.HasSuffix(feat, ".present"),
		strings.HasPrefix(feat, "usb-") && strings.HasSuffix(feat, ".present"):
		return true
	}
	switch feat {
	case "memory-numa", "iommu-enabled", "network-sriov.capable", "cpu-model.vendor_id":
		return true
	}
	return false
}

// NodeResourceRead reports whether hardware detection reads a node capacity.
func NodeResourceRead(r string) bool {
	return r == "nvidia.com/gpu" || r == "amd.com/gpu" || strings.HasPrefix(r, "gpu.intel.com/")
}
