{{- /*
  The platform Prometheus scrapes every exporter pod directly (a PodMonitor:
  no Service needed for per-node targets). Plain HTTP on the pod network, as
  the exporter serves it.
*/ -}}
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: kubevirt-metrics-exporter
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
spec:
  # job="kubevirt-metrics-exporter" (the pods' label value), which the
  # alerts and the dashboard select on, instead of the default
  # "<namespace>/<podmonitor>".
  jobLabel: app.kubernetes.io/name
  selector:
    matchLabels:
      app.kubernetes.io/name: kubevirt-metrics-exporter
  podMetricsEndpoints:
    - port: metrics
      path: /metrics
      # The VMs' storage is polled once a minute (QMP, QGA): scraping more
      # often only repeats the same values.
      interval: 30s
      # VM series carry the VM's own namespace, pod and node labels; without
      # this Prometheus would rename them exported_* (vendor commit ca3d20d).
      honorLabels: true
      relabelings:
        # The node on the scrape's own series (up), for per-node alerts.
        - sourceLabels: [__meta_kubernetes_pod_node_name]
          targetLabel: node
          action: replace
