{{- /*
  Node network changes by kubernetes-nmstate: a NodeNetworkConfigurationPolicy
  is being applied to its nodes (bridges and bonds VMs attach to). When its
  desired state changes, the nmstate webhook clears the conditions and sets
  them all Unknown; the handler then reports Progressing=True until every
  matching node is configured (Available=True) or one failed (Degraded=True).
  No conditions, Available=Unknown or Progressing=True is therefore a change
  not applied yet.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-nodenetworkconfigurationpolicies
spec:
  component: nmstate
  target:
    group: nmstate.io
    version: v1
    resource: nodenetworkconfigurationpolicies
  rules:
    # NodeNetworkConfigurationPolicyConditionProgressing=True
    # (policyconditions SetPolicyProgressing), or Available=Unknown / no
    # conditions (webhook deleteConditionsHook, setConditionsUnknownHook).
    - operation: Progressing
      expression: >-
        !has(object.status) || !has(object.status.conditions) ||
        size(object.status.conditions) == 0 ||
        object.status.conditions.exists(c, has(c.type) && c.type == 'Progressing' &&
        has(c.status) && c.status == 'True') ||
        object.status.conditions.exists(c, has(c.type) && c.type == 'Available' &&
        has(c.status) && c.status == 'Unknown')
