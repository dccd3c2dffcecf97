{{- /*
  Operator installs and upgrades through OLM, read from the
  ClusterServiceVersion phase: Pending (requirements not met yet),
  InstallReady, Installing, and during an upgrade Replacing (the old CSV
  handing over to the new one) and Deleting (the replaced CSV being removed).
  Succeeded and Failed are not operations.

  OLM copies the CSV of an operator watching all namespaces into every
  namespace, phase included; the copies are skipped exactly as OLM's
  IsCopied tells them apart (label olm.copiedFrom, status.reason Copied, or
  annotation olm.operatorNamespace naming another namespace), so one
  upgrade is one operation, not one per namespace.
*/ -}}
{{- /* The CSV is OLM's original, not a copy (OLM's IsCopied, negated). */ -}}
{{- $original := "!(has(object.metadata.labels) && 'olm.copiedFrom' in object.metadata.labels) && !(has(object.metadata.annotations) && 'olm.operatorNamespace' in object.metadata.annotations && object.metadata.annotations['olm.operatorNamespace'] != object.metadata.namespace) && !(has(object.status) && has(object.status.reason) && object.status.reason == 'Copied')" }}
apiVersion: ifo.kubevirt.io/v1alpha1
kind: OperationRuleSet
metadata:
  name: kubevirt-clusterserviceversions
spec:
  component: olm
  target:
    group: operators.coreos.com
    version: v1alpha1
    resource: clusterserviceversions
  rules:
    # CSVPhaseNone, CSVPhasePending: accepted, install strategy not attempted
    # (usually requirements not met yet).
    - operation: Pending
      expression: >-
        {{ $original }} &&
        (!has(object.status) || !has(object.status.phase) || object.status.phase in ['', 'Pending'])
    # CSVPhaseInstallReady: requirements met, install strategy not run yet.
    - operation: InstallReady
      expression: >-
        {{ $original }} &&
        has(object.status) && has(object.status.phase) && object.status.phase == 'InstallReady'
    # CSVPhaseInstalling: the operator's deployments are rolling out.
    - operation: Installing
      expression: >-
        {{ $original }} &&
        has(object.status) && has(object.status.phase) && object.status.phase == 'Installing'
    # CSVPhaseReplacing: a newer CSV takes over this one's resources.
    - operation: Replacing
      expression: >-
        {{ $original }} &&
        has(object.status) && has(object.status.phase) && object.status.phase == 'Replacing'
    # CSVPhaseDeleting: replaced, checked for safety, then deleted.
    - operation: Deleting
      expression: >-
        {{ $original }} &&
        has(object.status) && has(object.status.phase) && object.status.phase == 'Deleting'
