package kubeletdropin

// Group is settings that only work together: when an admin's
// KubeletConfig holds any member, a drop-in that sets the anchor leaves
// out every member it sets, so the node never runs half of one and half
// of the other.
type Group struct {
	Anchor  string
	Members []string
	// Triggers are settings outside the group that the group would
	// override on the node: an admin holding one defers the group too.
	Triggers []string
	Why      string
}

// Coupled are the groups, each from the vendor code that couples them.
var Coupled = []Group{
	{
		Anchor:  "autoSizingReserved",
		Members: sizingFields,
		// machine-config-operator pkg/controller/kubelet-config/helpers.go
		// (createNewKubeletDynamicSystemReservedIgnition): one file sets
		// whether the reservation is auto-sized and its fixed values.
		Why: "the node sizing file sets the system reservation as one",
	},
	{
		Anchor: "memoryManagerPolicy",
		Members: []string{"memoryManagerPolicy", "reservedMemory", "kubeReserved", "systemReserved", "autoSizingReserved",
			"evictionHard"},
		// kubernetes pkg/kubelet/cm/memorymanager/memory_manager.go
		// (validateReservedMemory) with pkg/kubelet/cm/
		// node_container_manager_linux.go (GetNodeAllocatableReservation):
		// with the Static policy, reservedMemory summed over NUMA nodes must
		// equal kubeReserved + systemReserved + evictionHard memory.available
		// or the kubelet does not start; auto-sized systemReserved
		// (machine-config-operator generateKubeletIgnFiles,
		// NODE_SIZING_ENABLED) cannot meet a fixed sum.
		Why: "the Static memory manager's reservedMemory must equal kubeReserved + systemReserved + evictionHard memory.available",
	},
	{
		Anchor: "cpuManagerPolicy",
		Members: []string{"cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "reservedSystemCPUs",
			"systemReservedCgroup", "enforceNodeAllocatable"},
		// kubernetes cmd/kubelet/app/server.go (run): with
		// reservedSystemCPUs the kubelet replaces systemReserved's cpu by
		// the size of that set and drops kubeReserved's, so an admin's CPU
		// reservation (fixed or auto-sized) would silently change.
		Triggers: []string{"systemReserved", "kubeReserved", "autoSizingReserved"},
		// kubernetes pkg/kubelet/cm/cpumanager/cpu_manager.go (NewManager:
		// the static policy needs a CPU reservation, here
		// reservedSystemCPUs) and pkg/kubelet/apis/config/validation/
		// validation.go (ValidateKubeletConfiguration: reservedSystemCPUs
		// refused beside systemReservedCgroup, and system-reserved
		// enforcement needs that cgroup); machine-config-operator
		// pkg/controller/kubelet-config/helpers.go (generateKubeletIgnFiles)
		// clears the cgroup and that enforcement beside reservedSystemCPUs
		// for a KubeletConfig, so a drop-in does it itself.
		Why: "the static CPU manager needs reservedSystemCPUs, which the kubelet refuses beside a system-reserved cgroup",
	},
}
