{{- /* The identity the exporter's pods run as: the RBAC and SCC grants name it. */ -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kubevirt-metrics-exporter
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
