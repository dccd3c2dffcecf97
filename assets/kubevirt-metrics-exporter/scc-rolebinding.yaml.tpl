{{- /* Only the exporter's ServiceAccount may use its SCC. */ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: kubevirt-metrics-exporter-scc
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: kubevirt-metrics-exporter-scc
subjects:
  - kind: ServiceAccount
    name: kubevirt-metrics-exporter
    namespace: kubevirt-metrics-exporter
