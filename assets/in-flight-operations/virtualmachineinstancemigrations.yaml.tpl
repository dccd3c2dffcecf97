{{- /*
  Live migrations, one operation per stage a cluster admin acts on
  differently: Pending (accepted, waiting for a slot under the cluster and
  per-node parallel migration limits, a running backup or quota), Migrating
  (target pod scheduled, prepared, memory being copied) and Synchronizing
  (the two ends of a cross-cluster, decentralized migration exchanging
  state). Succeeded and Failed are final: no operation.

  A migration has no owner reference to its VM; its correlation group is the
  VMI it moves (spec.vmiName), so `kubectl ifo tree` shows it under that VM's
  (or standalone VMI's) operations.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-virtualmachineinstancemigrations
spec:
  component: kubevirt
  target:
    group: kubevirt.io
    version: v1
    resource: virtualmachineinstancemigrations
  labels:
    # Shown under the VM (or VMI) whose correlation group it names.
    ifo.kubevirt.io/correlation-role: child
  labelExpressions:
    # The VMI being moved; label values hold 63 characters.
    - key: ifo.kubevirt.io/correlation-group
      expression: >-
        has(object.spec) && has(object.spec.vmiName) &&
        size(object.spec.vmiName) <= 63 ? object.spec.vmiName : ''
  rules:
    # MigrationPhaseUnset, MigrationPending: accepted; the target pod is
    # created once the parallel migration limits allow it (virt-controller
    # migration controller).
    - operation: Pending
      expression: >-
        !has(object.status) || !has(object.status.phase) ||
        object.status.phase in ['', 'Pending']
    # MigrationScheduling, MigrationScheduled, MigrationPreparingTarget,
    # MigrationTargetReady, MigrationRunning: the migration proper.
    - operation: Migrating
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['Scheduling', 'Scheduled', 'PreparingTarget', 'TargetReady', 'Running']
    # MigrationWaitingForSync, MigrationSynchronizing: decentralized migration
    # ends synchronizing before the target is created.
    - operation: Synchronizing
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase in ['WaitingForSync', 'Synchronizing']
