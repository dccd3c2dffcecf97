{{- /*
  Load-aware VM rebalancing, as the descheduler sees it: which nodes it finds
  too loaded (the KubeDescheduler operator's recording rules, the very
  series its KubeVirt profiles act on), what it evicts, and the live
  migrations that follow. In the HCO namespace, next to the autopilot's own
  dashboard, using the same project datasource.

  Eviction counters were renamed in descheduler 0.34 (metrics/metrics.go:
  descheduler_pods_evicted_total, the old descheduler_pods_evicted kept as
  deprecated); the OCP operand (openshift/descheduler) has only the old name
  up to release-4.20, so every query takes the new name or else the old
  one. The operator's ServiceMonitor copies the evicted pod's namespace to
  pod_namespace (bindata/assets/kube-descheduler/servicemonitor.yaml), since
  the scrape's own namespace label wins.
*/ -}}
{{- /* Counter name pairs: new (0.34+) or else old. */ -}}
{{- $evicted := list "descheduler_pods_evicted_total" "descheduler_pods_evicted" -}}
{{- /*
  Results that move a pod: "background" is a VM eviction KubeVirt turned into
  a live migration (pkg/descheduler/evictions/evictions.go evictPod; counted
  from openshift/descheduler release-4.21, not at all before). Any other
  result is a refusal: "error" or an eviction limit.
*/ -}}
{{- $moved := "success|background" -}}
{{- $loop := list "descheduler_loop_duration_seconds_bucket" "descheduler_descheduler_loop_duration_seconds_bucket" -}}
apiVersion: perses.dev/v1alpha2
kind: PersesDashboard
metadata:
  name: virt-platform-vm-rebalancing
  namespace: {{ .Namespace }}
spec:
  config:
    display:
      name: VM rebalancing (load-aware descheduler)
      description: Node load as the descheduler measures it, its evictions and the live migrations they start.
    duration: 6h
    refreshInterval: 1m
    panels:
      evicted_1h:
        kind: Panel
        spec:
          display:
            name: Evictions, last hour
            description: Pods moved, including VMs live-migrated in the background (counted from OCP 4.21; earlier descheduler builds count no background eviction, see the migrations panel).
          plugin:
            kind: StatChart
            spec:
              calculation: last-number
              format:
                unit: decimal
                decimalPlaces: 0
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(increase({{ index $evicted 0 }}{result=~"{{ $moved }}"}[1h])) or sum(increase({{ index $evicted 1 }}{result=~"{{ $moved }}"}[1h])) or vector(0)
      failed_1h:
        kind: Panel
        spec:
          display:
            name: Refused evictions, last hour
            description: Evictions that did not happen, result error (refused by the API, a PodDisruptionBudget) or an eviction limit.
          plugin:
            kind: StatChart
            spec:
              calculation: last-number
              format:
                unit: decimal
                decimalPlaces: 0
              thresholds:
                defaultColor: "#3e8635"
                steps:
                  - value: 1
                    color: "#f0ab00"
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(increase({{ index $evicted 0 }}{result!~"{{ $moved }}"}[1h])) or sum(increase({{ index $evicted 1 }}{result!~"{{ $moved }}"}[1h])) or vector(0)
      migrations_in_flight:
        kind: Panel
        spec:
          display:
            name: Live migrations in flight
            description: KubeVirt migrations by phase; an eviction of a VM becomes one of these.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
              yAxis:
                format:
                  unit: decimal
                  decimalPlaces: 0
                min: 0
              visual:
                display: line
                areaOpacity: 0.5
                stack: all
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(kubevirt_vmi_migrations_in_pending_phase)
                    seriesNameFormat: pending
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(kubevirt_vmi_migrations_in_scheduling_phase)
                    seriesNameFormat: scheduling
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(kubevirt_vmi_migrations_in_running_phase)
                    seriesNameFormat: running
      evictions_by_node:
        kind: Panel
        spec:
          display:
            name: Evictions by source node
            description: Pods moved off each node (evicted or, for VMs, live-migrated in the background).
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: decimal
                min: 0
              visual:
                display: bar
                stack: all
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum by (node) (increase({{ index $evicted 0 }}{result=~"{{ $moved }}"}[$__rate_interval])) or sum by (node) (increase({{ index $evicted 1 }}{result=~"{{ $moved }}"}[$__rate_interval]))
                    seriesNameFormat: "{{`{{node}}`}}"
      evictions_by_strategy:
        kind: Panel
        spec:
          display:
            name: Evictions by profile, strategy and result
            description: LowNodeUtilization evictions are the load-aware ones; background is a VM live-migrated, error a refusal.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: decimal
                min: 0
              visual:
                display: bar
                stack: all
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum by (profile, strategy, result) (increase({{ index $evicted 0 }}[$__rate_interval])) or sum by (profile, strategy, result) (increase({{ index $evicted 1 }}[$__rate_interval]))
                    seriesNameFormat: "{{`{{profile}}`}} / {{`{{strategy}}`}} ({{`{{result}}`}})"
      evicted_namespaces:
        kind: Panel
        spec:
          display:
            name: Most evicted namespaces, last hour
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: pod_namespace
                  header: Namespace
                - name: value
                  header: Evictions (1h)
                  sort: desc
                  format:
                    unit: decimal
                    decimalPlaces: 0
                - name: timestamp
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: topk(10, (sum by (pod_namespace) (increase({{ index $evicted 0 }}{result=~"{{ $moved }}"}[1h])) or sum by (pod_namespace) (increase({{ index $evicted 1 }}{result=~"{{ $moved }}"}[1h]))) > 0)
      cpu_utilization:
        kind: Panel
        spec:
          display:
            name: CPU utilization by node
            description: Recording rule descheduler:nodeutilization:cpu:avg1m (1-minute average), and the worker average it is compared with.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: percent-decimal
                min: 0
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: descheduler:nodeutilization:cpu:avg1m
                    seriesNameFormat: "{{`{{instance}}`}}"
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: descheduler:averageworkersutilization:cpu:avg1m
                    seriesNameFormat: worker average
      cpu_pressure:
        kind: Panel
        spec:
          display:
            name: CPU pressure by node
            description: Share of time tasks waited for a CPU (PSI), counted only above 70% utilization (descheduler:nodepressure:cpu:avg1m). Needs psi=1 on the nodes.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: percent-decimal
                min: 0
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: descheduler:nodepressure:cpu:avg1m
                    seriesNameFormat: "{{`{{instance}}`}}"
      combined_load:
        kind: Panel
        spec:
          display:
            name: Load the descheduler acts on
            description: descheduler:combined_utilization_and_pressure:avg1m, utilization while the workers average under 80%, pressure above.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: percent-decimal
                min: 0
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: descheduler:combined_utilization_and_pressure:avg1m
                    seriesNameFormat: "{{`{{instance}}`}}"
      distance:
        kind: Panel
        spec:
          display:
            name: Distance above the cluster average (OCP 4.21+)
            description: descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m, CPU and memory utilization and pressure above the worker average, amplified 3x and capped at 1. Empty before OCP 4.21.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
              yAxis:
                format:
                  unit: decimal
                  decimalPlaces: 2
                min: 0
                max: 1
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m
                    seriesNameFormat: "{{`{{instance}}`}}"
      loop_duration:
        kind: Panel
        spec:
          display:
            name: Descheduling cycle duration (p99)
          plugin:
            kind: TimeSeriesChart
            spec:
              yAxis:
                format:
                  unit: seconds
                min: 0
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: histogram_quantile(0.99, sum by (le) (rate({{ index $loop 0 }}[$__rate_interval])) or sum by (le) (rate({{ index $loop 1 }}[$__rate_interval])))
                    seriesNameFormat: p99
    layouts:
      - kind: Grid
        spec:
          display:
            title: Evictions and migrations
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/evicted_1h"}}
            - {x: 6, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/failed_1h"}}
            - {x: 12, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/migrations_in_flight"}}
            - {x: 0, y: 4, width: 12, height: 8, content: {$ref: "#/spec/panels/evicted_namespaces"}}
            - {x: 0, y: 12, width: 12, height: 8, content: {$ref: "#/spec/panels/evictions_by_node"}}
            - {x: 12, y: 8, width: 12, height: 12, content: {$ref: "#/spec/panels/evictions_by_strategy"}}
      - kind: Grid
        spec:
          display:
            title: Node load
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/combined_load"}}
            - {x: 12, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/distance"}}
            - {x: 0, y: 8, width: 12, height: 8, content: {$ref: "#/spec/panels/cpu_utilization"}}
            - {x: 12, y: 8, width: 12, height: 8, content: {$ref: "#/spec/panels/cpu_pressure"}}
      - kind: Grid
        spec:
          display:
            title: Descheduler
            collapse:
              open: false
          items:
            - {x: 0, y: 0, width: 12, height: 7, content: {$ref: "#/spec/panels/loop_duration"}}
