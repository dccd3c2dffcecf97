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
		Rule:       "a MachineConfigPool's machineConfigSelector: absent, `{}` or not valid renders no MachineConfig into the pool; with matchLabels or matchExpressions present but empty it renders every MachineConfig of every role",
		Source:     "openshift/machine-config-operator `pkg/controller/render/render_controller.go` `syncMachineConfigPool` (`reflect.DeepEqual(pool.Spec.MachineConfigSelector, &everything)`, then `metav1.LabelSelectorAsSelector`)",
		EnforcedBy: "`rendercontext.PoolTakes` (the pools a MachineConfig write or deletion reaches and waits for, the pools rendering a role)",
		ProvenBy:   "TestPoolTakesAsMCORendersIt",
	},
	{
		Rule:       "a KubeletConfig's (or ContainerRuntimeConfig's) machineConfigPoolSelector that is absent, empty or not valid selects no pool, never every pool",
		Source:     "openshift/machine-config-operator `pkg/controller/kubelet-config/kubelet_config_controller.go` `getPoolsForKubeletConfig` (`selector.Empty()`); `pkg/controller/container-runtime-config/container_runtime_config_controller.go` `getPoolsForContainerRuntimeConfig`",
		EnforcedBy: "`rendercontext.MCOSelects` (pools a KubeletConfig reaches, kubelet scopes)",
		ProvenBy:   "TestMCOSelectsAsMCO",
	},
	{
		Rule:       "a KubeletConfig's generated MachineConfig carries the role of each pool it selects, so every pool taking that role's MachineConfigs (a custom pool taking worker's) renders it too",
		Source:     "openshift/machine-config-operator `pkg/controller/kubelet-config/kubelet_config_controller.go` `syncKubeletConfig` (role = pool name); `pkg/controller/render/render_controller.go` `syncMachineConfigPool`",
		EnforcedBy: "`rendercontext.PoolsReached`",
		ProvenBy:   "TestPoolsReached",
	},
	{
		Rule:       "a node's primary pool: of the pools whose nodeSelector matches it (an empty one matches nothing), master first; else its one custom pool; else worker; two custom pools: none",
		Source:     "openshift/machine-config-operator `pkg/helpers/helpers.go` `GetPoolsForNode`, `ListPools`",
		EnforcedBy: "`rendercontext.poolOfClasses` (which nodes' hardware a pool's objects render from)",
		ProvenBy:   "TestPoolOfNodesAsMCO",
	},
	{
		Rule:       "a pool is at rest only when MCO judged its latest generation, reports it Updated (every machine updated, ready and available), not Updating nor Degraded, and its nodes run the spec's render; a rollout is the status's render not being the spec's (held until done); Degraded, or not Updated with no rollout (a node not ready), is held at most an hour; a paused pool rolls nothing",
		Source:     "openshift/machine-config-operator `pkg/controller/node/status.go` `calculateStatus`",
		EnforcedBy: "`engine.PoolBusy` (the gate's busy-pool check)",
		ProvenBy:   "TestPoolStateAsMCOWritesIt, TestGateAgainstTheOracle",
	},
	{
		Rule:       "one KubeletConfig per pool takes effect: MCO renders each KubeletConfig into its own MachineConfig per pool (`99-<pool>-generated-kubelet`, then `-1`, `-2`, ...), and the pool merges them in name order, the last one's kubelet.conf replacing the others whole",
		Source:     "openshift/machine-config-operator `pkg/controller/kubelet-config/kubelet_config_controller.go` `syncKubeletConfig`; `pkg/controller/kubelet-config/helpers.go` `getManagedKubeletConfigKey`",
		EnforcedBy: "`engine.Clash` (catalog `exclusive: pool`)",
		ProvenBy:   "TestKubeletClash, TestClashJudgedOnTheAppliedObject",
	},
	{
		Rule:       "a NodeHealthCheck's empty or absent selector selects every node; two checks on one node: the first to remediate wins",
		Source:     "medik8s/node-healthcheck-operator `api/v1alpha1/nodehealthcheck_types.go` (`Selector`, a value: absent is `{}`); `controllers/resources/manager.go` (later `internal/controller/resources/manager.go`) `GetNodes` (`metav1.LabelSelectorAsSelector`: `{}` is every node)",
		EnforcedBy: "`engine.Clash` (catalog `exclusive: nodes`)",
		ProvenBy:   "TestNodeHealthCheckClash",
	},
	{
		Rule:       "what a MachineConfig change costs: the policy entry of a file's path (as written) or of the deepest directory above it (cleaned, a separator added: `/` covers no file), a unit's by name; anything without an entry, kernel arguments, extensions, kernel type, OS image or FIPS reboots; None beside another action is dropped",
		Source:     "openshift/machine-config-operator `pkg/daemon/update.go` `calculatePostConfigChangeNodeDisruptionActionFromMCDiffs`, `newMachineConfigDiff`; `pkg/controller/common/helpers.go` `FindClosestFilePolicyPathMatch`, `IsSubdirectory`",
		EnforcedBy: "`pkg/nodedisruption` (`Diff`, `Policy.Actions`)",
		ProvenBy:   "TestActionsFollowMCORules, TestActionsInvariants, TestClusterPolicy",
	},
	{
		Rule:       "the kubelet starts with the memory manager's Static policy only when reservedMemory summed over NUMA nodes equals systemReserved + kubeReserved + the hard eviction threshold; a KubeletConfig without systemReserved memory gets the node's own (1Gi up to 4.20, sized per node from 4.21), never 0",
		Source:     "kubernetes/kubernetes `pkg/kubelet/cm/memorymanager/memory_manager.go` `validateReservedMemory`; `pkg/kubelet/cm/node_container_manager_linux.go` `GetNodeAllocatableReservation`; `pkg/kubelet/eviction/defaults_linux.go`; openshift/machine-config-operator `pkg/controller/kubelet-config/helpers.go` `createNewKubeletDynamicSystemReservedIgnition` and the kubelet template's `--system-reserved`",
		EnforcedBy: "`pkg/reservation.Check`",
		ProvenBy:   "TestCheck",
	},
}
