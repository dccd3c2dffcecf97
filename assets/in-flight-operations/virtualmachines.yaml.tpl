{{- /*
  In-flight operations of VirtualMachines, read from status.printableStatus:
  KubeVirt's own one-word summary of the VM (virt-controller
  setPrintableStatus, first match wins). Only the transitional values are
  operations; Running, Stopped, Paused and the error values (ErrorUnschedulable,
  CrashLoopBackOff, ErrImagePull, DataVolumeError...) are states, not work in
  progress. Snapshots and restores are reported by their own status fields.

  Every expression guards each field with has(): the IFO operator drops the
  whole rule set's result for an object when one expression errors, which
  would mark that VM's running operations Completed.

  VM operations are the root of the VM's tree in `kubectl ifo tree`: the
  VMI's migration (same name) hangs under it (correlation labels).
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-virtualmachines
spec:
  # Groups these operations with the VMI and migration rule sets.
  component: kubevirt
  target:
    group: kubevirt.io
    version: v1
    resource: virtualmachines
  labels:
    # The VM is the parent of its VMI's and migrations' operations.
    ifo.kubevirt.io/correlation-role: root
  labelExpressions:
    # The VMI and its migrations carry the VM's name (a label value holds at
    # most 63 characters; a longer name is left uncorrelated, never rejected).
    - key: ifo.kubevirt.io/correlation-group
      expression: "size(object.metadata.name) <= 63 ? object.metadata.name : ''"
  rules:
    # VirtualMachineStatusProvisioning: DataVolumes of the VM are being provisioned.
    - operation: Provisioning
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'Provisioning'
    # VirtualMachineStatusWaitingForVolumeBinding: set to start, PVCs not bound yet.
    - operation: WaitingForVolumeBinding
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'WaitingForVolumeBinding'
    # VirtualMachineStatusStarting: the VMI is unprocessed, scheduling or scheduled.
    - operation: Starting
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'Starting'
    # VirtualMachineStatusMigrating: the VMI's live migration has started and not ended.
    - operation: Migrating
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'Migrating'
    # VirtualMachineStatusStopping: the VMI is being deleted or a stop is expected.
    - operation: Stopping
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'Stopping'
    # VirtualMachineStatusTerminating: the VM itself is being deleted.
    - operation: Terminating
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'Terminating'
    # VirtualMachineStatusWaitingForReceiver: a receiver VM of a cross-cluster
    # (decentralized) migration; the migration starts next.
    - operation: WaitingForReceiver
      expression: >-
        has(object.status) && has(object.status.printableStatus) &&
        object.status.printableStatus == 'WaitingForReceiver'
    # VirtualMachineStatus.SnapshotInProgress: name of the running VirtualMachineSnapshot.
    - operation: SnapshotInProgress
      expression: >-
        has(object.status) && has(object.status.snapshotInProgress) &&
        object.status.snapshotInProgress != ''
    # VirtualMachineStatus.RestoreInProgress: name of the running VirtualMachineRestore.
    - operation: RestoreInProgress
      expression: >-
        has(object.status) && has(object.status.restoreInProgress) &&
        object.status.restoreInProgress != ''
