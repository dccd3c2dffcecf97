{{- /*
  Console monitoring plugin; the name is fixed by the CRD for this type.

  Incident detection (the cluster health analyzer, which groups related
  alerts into incidents) and the Perses dashboards view are switched on
  where the installed Cluster Observability Operator's UIPlugin CRD offers
  them, read from its schema: spec.monitoring.clusterHealthAnalyzer, else
  the older spec.monitoring.incidents (deprecated in its favour), else
  neither. A field the CRD lacks would be pruned by the API server and read
  as drift on every pass. Without a readable CRD (offline render) the newest
  API is assumed.
*/ -}}
{{- $crd := "uiplugins.observability.openshift.io" -}}
{{- $known := crdKnown $crd -}}
{{- $analyzer := or (not $known) (crdHasField $crd "spec.monitoring.clusterHealthAnalyzer") -}}
{{- $incidents := and (not $analyzer) (crdHasField $crd "spec.monitoring.incidents") -}}
{{- $perses := or (not $known) (crdHasField $crd "spec.monitoring.perses") -}}
apiVersion: observability.openshift.io/v1alpha1
kind: UIPlugin
metadata:
  name: monitoring
spec:
  type: Monitoring
  monitoring:
{{- if $analyzer }}
    clusterHealthAnalyzer:
      enabled: true
{{- else if $incidents }}
    incidents:
      enabled: true
{{- end }}
{{- if $perses }}
    # The console's Dashboards view of Perses dashboards: the autopilot's,
    # the descheduler's and the metrics exporter's are PersesDashboards.
    perses:
      enabled: true
{{- end }}
{{- if not (or $analyzer $incidents $perses) }}
    {}
{{- end }}
