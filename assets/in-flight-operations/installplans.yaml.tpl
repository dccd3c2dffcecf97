{{- /*
  OLM InstallPlans being resolved or applied: the CRDs, RBAC and CSV of an
  operator install or upgrade are being created. Complete and Failed are
  final.

  RequiresApproval is left out on purpose: OLM garbage-collects InstallPlans
  by count only (five per namespace, oldest generation first), so an
  unapproved plan that a newer one superseded keeps that phase and would be
  reported forever. The Subscription rule set reports the approval its
  current plan waits for.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-installplans
spec:
  component: olm
  target:
    group: operators.coreos.com
    version: v1alpha1
    resource: installplans
  rules:
    # InstallPlanPhaseNone, InstallPlanPhasePlanning: being resolved.
    - operation: Planning
      expression: >-
        !has(object.status) || !has(object.status.phase) ||
        object.status.phase in ['', 'Planning']
    # InstallPlanPhaseInstalling: the plan's steps are being applied.
    - operation: Installing
      expression: >-
        has(object.status) && has(object.status.phase) &&
        object.status.phase == 'Installing'
