{{- /*
  Target discovery for the platform Prometheus: a PodMonitor makes it list
  and watch the pods of this namespace, which its ServiceAccount may not do
  by default outside openshift-* namespaces.
*/ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: kubevirt-metrics-exporter-prometheus
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [get, list, watch]
