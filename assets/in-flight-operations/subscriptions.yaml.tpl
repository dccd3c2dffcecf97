{{- /*
  OLM Subscriptions with an install or upgrade under way: the bundle being
  unpacked, an InstallPlan created and not yet installed (state
  UpgradePending), and, within that, a plan waiting for an admin's manual
  approval. AtLatestKnown, UpgradeAvailable and UpgradeFailed are not work
  in progress.
*/ -}}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-subscriptions
spec:
  component: olm
  target:
    group: operators.coreos.com
    version: v1alpha1
    resource: subscriptions
  rules:
    # Condition BundleUnpacking=True: the bundle unpack job is running.
    - operation: BundleUnpacking
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'BundleUnpacking' &&
        has(c.status) && c.status == 'True')
    # SubscriptionStateUpgradePending: an InstallPlan exists and its CSV is not
    # installed yet (catalog operator setIPReference, ensureSubscriptionCSVState).
    - operation: UpgradePending
      expression: >-
        has(object.status) && has(object.status.state) &&
        object.status.state == 'UpgradePending'
    # Condition InstallPlanPending=True with reason RequiresApproval: the
    # current InstallPlan waits for manual approval.
    - operation: RequiresApproval
      expression: >-
        has(object.status) && has(object.status.conditions) &&
        object.status.conditions.exists(c, has(c.type) && c.type == 'InstallPlanPending' &&
        has(c.status) && c.status == 'True' && has(c.reason) && c.reason == 'RequiresApproval')
