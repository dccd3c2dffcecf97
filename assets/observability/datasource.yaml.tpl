{{- /*
  The Prometheus datasource the dashboards of one namespace query: the
  platform Thanos Querier, as the Cluster Observability Operator's own
  datasources do (pkg/controllers/uiplugin/accelerators.go). Perses turns a
  namespace into a project and a dashboard without an explicit datasource
  uses its project's default, so each namespace holding our dashboards gets
  this one (.Params.namespace, else the HCO namespace). The COO's cluster-wide
  default (PersesGlobalDatasource) is in no released COO yet.
*/ -}}
{{- $name := "virt-platform-thanos-querier" -}}
apiVersion: perses.dev/v1alpha2
kind: PersesDatasource
metadata:
  name: {{ $name }}
  namespace: {{ index .Params "namespace" | default .Namespace }}
spec:
  config:
    display:
      name: Cluster metrics (Thanos Querier)
    # The project's default: dashboard queries name no datasource.
    default: true
    plugin:
      kind: PrometheusDatasource
      spec:
        proxy:
          kind: HTTPProxy
          spec:
            url: https://thanos-querier.openshift-monitoring.svc.cluster.local:9091
            # The Perses secret the operator writes from spec.client:
            # "<datasource name>-secret" (perses-operator
            # controllers/datasources/datasource_controller.go).
            secret: {{ $name }}-secret
        # The platform Prometheus scrapes every 30s: $__rate_interval then
        # spans at least 4 scrapes.
        scrapeInterval: 30s
  client:
    tls:
      enable: true
      caCert:
        # The service CA the Perses pod mounts at /ca.
        type: file
        certPath: /ca/service-ca.crt
