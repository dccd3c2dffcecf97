{{- /* Grants the read-only ClusterRole to the exporter's ServiceAccount. */ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kubevirt-metrics-exporter
subjects:
  - kind: ServiceAccount
    name: kubevirt-metrics-exporter
    namespace: kubevirt-metrics-exporter
