{{- /*
  Alerts on the exporter's own health only: whether each node that runs VMs
  has a working exporter. They use the scrape's `up` and kube-state-metrics,
  no metric of the exporter itself, so they hold whatever it exports. The
  vendor's latency alerts (deploy/prometheus-rules) are not shipped: their
  thresholds depend on the storage behind the VMs.
*/ -}}
{{- $job := "kubevirt-metrics-exporter" -}}
{{- $ns := "kubevirt-metrics-exporter" -}}
{{- $runbooks := "https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks" -}}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: kubevirt-metrics-exporter-alerts
  namespace: {{ $ns }}
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
spec:
  groups:
    - name: kubevirt-metrics-exporter
      rules:
        # A node runs VMs (a Running virt-launcher pod, owned by a VMI) and
        # no Ready exporter pod: its VMs' storage is not observed.
        - alert: KubeVirtMetricsExporterNotRunning
          expr: |
            count by (node) (
              kube_pod_info{created_by_kind="VirtualMachineInstance"}
              * on (namespace, pod) group_left () (kube_pod_status_phase{phase="Running"} == 1)
            )
            unless on (node)
            (
              kube_pod_info{namespace="{{ $ns }}", created_by_name="kubevirt-metrics-exporter"}
              * on (namespace, pod) group_left () (kube_pod_status_ready{namespace="{{ $ns }}", condition="true"} == 1)
            )
          for: 15m
          labels:
            severity: warning
          annotations:
            summary: "No ready kubevirt-metrics-exporter on node {{`{{ $labels.node }}`}}, which runs VMs."
            description: "Storage latency of the VMs on {{`{{ $labels.node }}`}} is not collected: the exporter pod is missing, not scheduled there (node selector, taints) or not ready."
            runbook_url: {{ $runbooks }}/KubeVirtMetricsExporterNotRunning.md
        # The pod is there but Prometheus cannot scrape it.
        - alert: KubeVirtMetricsExporterScrapeFailing
          expr: max by (node, pod) (up{job="{{ $job }}", namespace="{{ $ns }}"}) == 0
          for: 10m
          labels:
            severity: warning
          annotations:
            summary: "Prometheus cannot scrape kubevirt-metrics-exporter on node {{`{{ $labels.node }}`}}."
            description: "Scrapes of {{`{{ $labels.pod }}`}} have failed for 10 minutes (network policy, crash or overload); the node's VM storage metrics are missing."
            runbook_url: {{ $runbooks }}/KubeVirtMetricsExporterScrapeFailing.md
        # VMs run but Prometheus has no exporter target at all: the PodMonitor
        # is not picked up (namespace label, Prometheus RBAC) or no pod exists.
        - alert: KubeVirtMetricsExporterAbsent
          expr: |
            absent(up{job="{{ $job }}", namespace="{{ $ns }}"})
            and on ()
            count(kube_pod_info{created_by_kind="VirtualMachineInstance"}) > 0
          for: 15m
          labels:
            severity: warning
          annotations:
            summary: "kubevirt-metrics-exporter is turned on but no exporter is scraped."
            description: "No VM storage latency is collected anywhere in the cluster: check the DaemonSet and the PodMonitor in namespace {{ $ns }}."
            runbook_url: {{ $runbooks }}/KubeVirtMetricsExporterAbsent.md
