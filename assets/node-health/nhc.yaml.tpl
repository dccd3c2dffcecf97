{{- /*
  Remediate workers that stay NotReady or Unknown for 5 minutes with self
  node remediation (the template the SNR operator creates), so VMs on a dead
  node are restarted elsewhere. minHealthy 51% stops remediation when most of
  the cluster is unhealthy: that is a network or control-plane problem, not a
  node one. Cluster-scoped: no namespace.
*/ -}}
apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  name: kubevirt-workers
spec:
  minHealthy: 51%
  selector:
    matchExpressions:
      - key: node-role.kubernetes.io/worker
        operator: Exists
      - key: node-role.kubernetes.io/control-plane
        operator: DoesNotExist
  remediationTemplate:
    apiVersion: self-node-remediation.medik8s.io/v1alpha1
    kind: SelfNodeRemediationTemplate
    name: self-node-remediation-automatic-strategy-template
    namespace: openshift-workload-availability
  unhealthyConditions:
    - type: Ready
      status: "False"
      duration: 300s
    - type: Ready
      status: Unknown
      duration: 300s
