{{- /*
  The right to run pods under the exporter's SCC, in its namespace only
  (SCC admission checks "use" in the pod's namespace).
*/ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: kubevirt-metrics-exporter-scc
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
rules:
  - apiGroups: [security.openshift.io]
    resources: [securitycontextconstraints]
    resourceNames: [kubevirt-metrics-exporter]
    verbs: [use]
