{{- /*
  Node configuration roll-outs: a MachineConfigPool reports Updating=True
  while its nodes are drained, reconfigured and rebooted one by one (and, in
  image mode, while the new OS image is built). A paused pool with pending
  changes reports Updating=False: nothing moves until it is unpaused.

  The autopilot's own MachineConfigs and KubeletConfigs (swap, PSI, NUMA,
  kubelet tuning...) start such roll-outs; so do cluster updates.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-machineconfigpools
spec:
  component: machine-config
  target:
    group: machineconfiguration.openshift.io
    version: v1
    resource: machineconfigpools
  rules:
    # MachineConfigPoolUpdating=True (node controller calculateStatus).
    - operation: Updating
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'Updating' &&
        has(c.status) && c.status == 'True')
