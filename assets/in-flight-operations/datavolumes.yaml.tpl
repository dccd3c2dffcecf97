{{- /*
  Disk population by CDI DataVolumes. CDI splits one operation into many
  phases (ten for a clone, by strategy and step); they are grouped into the
  operation an admin recognizes: Importing, ImportPaused (a multi-stage,
  warm import between checkpoints, as MTV warm migrations do), Cloning and
  Uploading. Pending, WaitForFirstConsumer and PendingPopulation wait for
  storage or for a VM to start, and do no work yet: not operations.

  A DataVolume from a VM's dataVolumeTemplates is owned by the VM, so
  `kubectl ifo tree` shows it under the VM's Provisioning through the owner
  reference; no correlation labels are needed.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-datavolumes
spec:
  component: cdi
  target:
    group: cdi.kubevirt.io
    version: v1beta1
    resource: datavolumes
  rules:
    # ImportScheduled, ImportInProgress: the importer pod is created / copying.
    - operation: Importing
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['ImportScheduled', 'ImportInProgress']
    # Paused: a multi-stage import finished a checkpoint and waits for the next
    # (import-controller sets it when IsMultiStageImportInProgress).
    - operation: ImportPaused
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'Paused'
    # CloneScheduled, CloneInProgress (host-assisted), SnapshotForSmartCloneInProgress,
    # CloneFromSnapshotSourceInProgress, SmartClonePVCInProgress, CSICloneInProgress,
    # PrepClaimInProgress, RebindInProgress (clone populator steps), and
    # ExpansionInProgress, NamespaceTransferInProgress (declared clone steps).
    - operation: Cloning
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['CloneScheduled', 'CloneInProgress',
        'SnapshotForSmartCloneInProgress', 'CloneFromSnapshotSourceInProgress',
        'SmartClonePVCInProgress', 'CSICloneInProgress', 'PrepClaimInProgress',
        'RebindInProgress', 'ExpansionInProgress', 'NamespaceTransferInProgress']
    # UploadScheduled, UploadReady: the upload server is starting / accepting data.
    - operation: Uploading
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['UploadScheduled', 'UploadReady']
