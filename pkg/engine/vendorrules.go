package engine

// VendorRule is one rule the autopilot takes from another project's code:
// what it says, where the vendor's code says it (repository, file and
// function), which code here follows it, and the test whose table was read
// from the vendor's code. docs/assets.md lists them (cmd/docs-gen).
type VendorRule struct {
	Rule       string
	Source     string
	EnforcedBy string
	ProvenBy   string
}

// VendorRules are the rules taken from vendors' code.
var VendorRules = []VendorRule{
	{
		Rule:       "a MachineConfigPool's machineConfigSelector and a KubeletConfig's machineConfigPoolSelector that is absent, empty or not valid selects nothing, never everything",
		Source:     "openshift/machine-config-operator `pkg/controller/render/render_controller.go` `getMachineConfigsForPool`; `pkg/controller/kubelet-config/kubelet_config_controller.go` `getPoolsForKubeletConfig`",
		EnforcedBy: "`rendercontext.MCOSelects` (pools a write reaches, kubelet scopes, pools rendering a role)",
		ProvenBy:   "TestMCOSelectsAsMCO, TestPoolWithAnEmptySelectorIsReachedByNothing",
	},
	{
		Rule:       "a node's primary pool: of the pools whose nodeSelector matches it (an empty one matches nothing), master first; else its one custom pool; else worker; two custom pools: none",
		Source:     "openshift/machine-config-operator `pkg/helpers/helpers.go` `GetPoolsForNode`, `ListPools`",
		EnforcedBy: "`rendercontext.poolOfNodes` (which nodes' hardware a pool's objects render from)",
		ProvenBy:   "TestPoolOfNodesAsMCO",
	},
	{
		Rule:       "one KubeletConfig per pool takes effect: MCO renders each pool's KubeletConfigs into one MachineConfig, the newest winning",
		Source:     "openshift/machine-config-operator `pkg/controller/kubelet-config/kubelet_config_controller.go` `syncKubeletConfig`; `pkg/controller/kubelet-config/helpers.go` `getManagedKubeletConfigKey`",
		EnforcedBy: "`engine.Clash` (catalog `exclusive: pool`)",
		ProvenBy:   "TestKubeletClash, TestClashJudgedOnTheAppliedObject",
	},
	{
		Rule:       "a NodeHealthCheck's empty or absent selector selects every node; two checks on one node: the first to remediate wins",
		Source:     "medik8s/node-healthcheck-operator `api/v1alpha1/nodehealthcheck_types.go` (`Selector`)",
		EnforcedBy: "`engine.Clash` (catalog `exclusive: nodes`)",
		ProvenBy:   "TestNodeHealthCheckClash",
	},
	{
		Rule:       "what a MachineConfig change costs: the policy entry of a file's path or of the deepest directory above it, a unit's by name; anything without an entry, kernel arguments, extensions, kernel type, OS image or FIPS reboots; None beside another action is dropped",
		Source:     "openshift/machine-config-operator `pkg/daemon/update.go` `calculatePostConfigChangeNodeDisruptionActionFromMCDiffs`, `newMachineConfigDiff`; `pkg/controller/common/helpers.go` `FindClosestFilePolicyPathMatch`",
		EnforcedBy: "`pkg/nodedisruption` (`Diff`, `Policy.Actions`)",
		ProvenBy:   "TestActionsFollowMCORules, TestActionsInvariants, TestClusterPolicy",
	},
	{
		Rule:       "the kubelet starts with the memory manager's Static policy only when reservedMemory summed over NUMA nodes equals systemReserved + kubeReserved + the hard eviction threshold",
		Source:     "kubernetes/kubernetes `pkg/kubelet/cm/memorymanager/memory_manager.go` `validateReservedMemory`; `pkg/kubelet/cm/node_container_manager_linux.go` `GetNodeAllocatableReservation`; `pkg/kubelet/eviction/defaults_linux.go`",
		EnforcedBy: "`pkg/reservation.Check`",
		ProvenBy:   "TestCheck",
	},
}
