{{- /*
  In-flight operations of running VMs, read from the VirtualMachineInstance:
  its phase (starting), its migration state, its deletion, the eviction
  KubeVirt turned into a migration, and the conditions virt-controller holds
  True while a live change is applied (CPU or memory hotplug, volume
  migration, network live update) or while a user keeps the VM paused.

  Every expression guards each field with has(): one erroring expression
  makes the IFO operator drop the rule set's result for the object, which
  would mark its running operations Completed.

  A VMI owned by a VM hangs under the VM's operations through its owner
  reference; a standalone VMI is the root of its own migrations (same
  correlation group: the VMI name, which the migration names in spec.vmiName).
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-virtualmachineinstances
spec:
  component: kubevirt
  target:
    group: kubevirt.io
    version: v1
    resource: virtualmachineinstances
  labels:
    # Parent of its migrations when no VM operation is there to be one.
    ifo.kubevirt.io/correlation-role: root
  labelExpressions:
    # The VMI's name (the VM's name for a VM's VMI); label values hold 63 characters.
    - key: ifo.kubevirt.io/correlation-group
      expression: "size(object.metadata.name) <= 63 ? object.metadata.name : ''"
  rules:
    # VmPhaseUnset, Pending, Scheduling, Scheduled: accepted, launcher pod not
    # running the domain yet (VirtualMachineInstance.IsUnprocessed, IsScheduling,
    # IsScheduled). A VMI being deleted is Stopping instead.
    - operation: Starting
      expression: >-
        !has(object.metadata.deletionTimestamp) &&
        (!has(object.status) || !has(object.status.phase) ||
        object.status.phase in ['', 'Pending', 'Scheduling', 'Scheduled'])
    # WaitingForSync: target VMI of a cross-cluster (decentralized) migration,
    # waiting for the source to synchronize.
    - operation: WaitingForSync
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'WaitingForSync'
    # status.migrationState has a startTimestamp and no endTimestamp: the test
    # virt-controller uses for "migrating" (pkg/util/migrations IsMigrating).
    # Both timestamps are nullable in the schema, so null counts as unset.
    - operation: Migrating
      expression: >-
        has(object.status) && has(object.status.migrationState) &&
        has(object.status.migrationState.startTimestamp) &&
        object.status.migrationState.startTimestamp != null &&
        (!has(object.status.migrationState.endTimestamp) ||
        object.status.migrationState.endTimestamp == null)
    # status.evacuationNodeName is set when a node drain evicts the VMI
    # (IsMarkedForEviction); KubeVirt then migrates it away from that node.
    - operation: EvictionRequested
      expression: >-
        has(object.status) && has(object.status.evacuationNodeName) &&
        object.status.evacuationNodeName != ''
    # Deleted but not yet Succeeded or Failed (IsMarkedForDeletion, !IsFinal):
    # the guest is shutting down within its grace period.
    - operation: Stopping
      expression: >-
        has(object.metadata.deletionTimestamp) &&
        !(has(object.status) && has(object.status.phase) &&
        object.status.phase in ['Succeeded', 'Failed'])
    # Condition Paused=True: paused by a user; the guest does not run until unpaused.
    - operation: Paused
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'Paused' &&
        has(c.status) && c.status == 'True')
    # Condition HotVCPUChange=True: vCPU hotplug in progress (applied by a migration).
    - operation: HotVCPUChange
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'HotVCPUChange' &&
        has(c.status) && c.status == 'True')
    # Condition HotMemoryChange=True: memory hotplug in progress (applied by a migration).
    - operation: HotMemoryChange
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'HotMemoryChange' &&
        has(c.status) && c.status == 'True')
    # Condition VolumesChange=True: volume (storage) migration in progress;
    # False after a cancellation.
    - operation: VolumesChange
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'VolumesChange' &&
        has(c.status) && c.status == 'True')
    # Condition MigrationRequired=True: a network interface hot(un)plug waits
    # for an automatic migration. False is the 15 s grace period in which the
    # change may still apply without one (pkg/network/migration Evaluate).
    - operation: MigrationRequired
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'MigrationRequired' &&
        has(c.status) && c.status == 'True')
