{{- /* Console monitoring plugin; the name is fixed by the CRD for this type. */ -}}
apiVersion: observability.openshift.io/v1alpha1
kind: UIPlugin
metadata:
  name: monitoring
spec:
  type: Monitoring
  monitoring:
    clusterHealthAnalyzer:
      enabled: true
    # The console's Dashboards view of Perses dashboards: the autopilot's,
    # the descheduler's and the metrics exporter's are PersesDashboards.
    perses:
      enabled: true
