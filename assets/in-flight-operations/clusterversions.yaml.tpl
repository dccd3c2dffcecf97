{{- /*
  OpenShift cluster updates: ClusterVersion `version` reports
  Progressing=True while the cluster-version operator applies a release
  (openshift/api: "Progressing is set to true if an update is being
  applied"). Worker pools may keep rolling after it ends; the
  MachineConfigPool rule set reports those.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-clusterversions
spec:
  component: cluster-version
  target:
    group: config.openshift.io
    version: v1
    resource: clusterversions
  rules:
    # ClusterStatusConditionType OperatorProgressing ("Progressing") = True.
    - operation: Progressing
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'Progressing' &&
        has(c.status) && c.status == 'True')
