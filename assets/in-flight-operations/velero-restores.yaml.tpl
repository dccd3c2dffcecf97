{{- /*
  Velero restores (OADP on OpenShift), which recreate VMs and their disks.
  The operations are Velero's own phases, the PartiallyFailed variants
  folded into the phase they continue; Completed, PartiallyFailed, Failed
  and FailedValidation are final.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-velero-restores
spec:
  # OADP is how Velero is installed and supported on OpenShift.
  component: oadp
  target:
    group: velero.io
    version: v1
    resource: restores
  rules:
    # No phase, RestorePhaseNew: created, not processed yet.
    - operation: Queued
      expression: >-
        !has(object.status) || !has(object.status.phase) ||
        object.status.phase in ['', 'New']
    # RestorePhaseInProgress: resources and volumes are being restored.
    - operation: InProgress
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'InProgress'
    # RestorePhaseWaitingForPluginOperations(+PartiallyFailed): volume data is downloading.
    - operation: WaitingForPluginOperations
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['WaitingForPluginOperations', 'WaitingForPluginOperationsPartiallyFailed']
    # RestorePhaseFinalizing(+PartiallyFailed): wrap-up tasks before the final phase.
    - operation: Finalizing
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['Finalizing', 'FinalizingPartiallyFailed']
