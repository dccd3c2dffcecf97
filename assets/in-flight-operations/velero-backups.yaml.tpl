{{- /*
  Velero backups (OADP on OpenShift), which back VMs up with their disks.
  The operations are Velero's own phases, the PartiallyFailed variants
  folded into the phase they continue: the backup is not usable until it is
  Completed, PartiallyFailed or Failed, and the data mover keeps uploading
  disk snapshots during WaitingForPluginOperations.

  Backups live in Velero's namespace (openshift-adp by default) but the rule
  set watches all namespaces: Velero may be installed elsewhere.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-velero-backups
spec:
  # OADP is how Velero is installed and supported on OpenShift.
  component: oadp
  target:
    group: velero.io
    version: v1
    resource: backups
  rules:
    # No phase, BackupPhaseNew, BackupPhaseQueued, BackupPhaseReadyToStart:
    # created, not started yet (Queued and ReadyToStart since Velero 1.18).
    - operation: Queued
      expression: >-
        !has(object.status) || !has(object.status.phase) ||
        object.status.phase in ['', 'New', 'Queued', 'ReadyToStart']
    # BackupPhaseInProgress: resources, volume snapshots and backup hooks are running.
    - operation: InProgress
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'InProgress'
    # BackupPhaseWaitingForPluginOperations(+PartiallyFailed): snapshot data is uploading.
    - operation: WaitingForPluginOperations
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['WaitingForPluginOperations', 'WaitingForPluginOperationsPartiallyFailed']
    # BackupPhaseFinalizing(+PartiallyFailed): final update of the stored backup.
    - operation: Finalizing
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['Finalizing', 'FinalizingPartiallyFailed']
    # BackupPhaseDeleting: the backup and its data are being deleted.
    - operation: Deleting
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'Deleting'
