{{- /*
  What the autopilot does, from its own metrics (docs/metrics.md): whether
  every asset converged, what it had to correct and who keeps undoing it,
  and what waits for a person. In the HCO namespace, so it appears under
  Observe > Dashboards (Perses) for that project next to the datasource
  asset observability/datasource.yaml.tpl; queries name no datasource and
  use the project's default.

  Label names are those of docs/metrics.md: the ServiceMonitor
  (config/prometheus) honors the metrics' labels, so `namespace` is the
  object's, not the autopilot pod's ($objNs keeps the name in one place).
*/ -}}
{{- $objNs := "namespace" -}}
{{- /* Outcome groups (docs/metrics.md, virt_platform_autopilot_asset_outcome). */ -}}
{{- $compliant := "Applied|Unchanged" -}}
{{- $attention := "Failed|Invalid|Throttled|Conflict|MissingDependency|Settling|Staged" -}}
{{- $byChoice := "Excluded|Unmanaged|Paused|Retained|Inactive|Deleted" -}}
apiVersion: perses.dev/v1alpha2
kind: PersesDashboard
metadata:
  name: virt-platform-autopilot
  namespace: {{ .Namespace }}
spec:
  config:
    display:
      name: Virt Platform Autopilot
      description: Convergence, drift and corrective writes of the assets the autopilot manages.
    # Drift and fights show up over hours, not minutes.
    duration: 6h
    refreshInterval: 1m
    panels:
      compliant:
        kind: Panel
        spec:
          display:
            name: Compliant assets
            description: Assets whose object matches the platform baseline (outcome Applied or Unchanged).
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
                    query: count(max by (asset) (virt_platform_autopilot_asset_outcome{outcome=~"{{ $compliant }}"}) == 1) or vector(0)
      attention:
        kind: Panel
        spec:
          display:
            name: Assets needing attention
            description: Outcome Failed, Invalid, Throttled, Conflict, MissingDependency, or a write waiting (Settling, Staged); the tables below say why.
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
                    color: "#c9190b"
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: count(max by (asset) (virt_platform_autopilot_asset_outcome{outcome=~"{{ $attention }}"}) == 1) or vector(0)
      by_choice:
        kind: Panel
        spec:
          display:
            name: Assets left alone
            description: Turned off, excluded, unmanaged, paused or retained by an admin's choice or an unmet condition; not drift.
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
                    query: count(max by (asset) (virt_platform_autopilot_asset_outcome{outcome=~"{{ $byChoice }}"}) == 1) or vector(0)
      compliance_ratio:
        kind: Panel
        spec:
          display:
            name: Compliance
            description: Compliant assets among those the autopilot is trying to converge (compliant plus needing attention).
          plugin:
            kind: StatChart
            spec:
              calculation: last-number
              format:
                unit: percent-decimal
                decimalPlaces: 1
              thresholds:
                defaultColor: "#c9190b"
                steps:
                  - value: 1
                    color: "#3e8635"
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum(max by (asset) (virt_platform_autopilot_asset_outcome{outcome=~"{{ $compliant }}"})) / sum(max by (asset) (virt_platform_autopilot_asset_outcome{outcome=~"{{ $compliant }}|{{ $attention }}"}))
      outcomes:
        kind: Panel
        spec:
          display:
            name: Assets by outcome
            description: How many assets ended their last reconcile in each outcome.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
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
                    # max first: during a rollout two pods may report.
                    query: sum by (outcome) (max by (asset, outcome) (virt_platform_autopilot_asset_outcome)) > 0
                    seriesNameFormat: "{{`{{outcome}}`}}"
      asset_outcomes:
        kind: Panel
        spec:
          display:
            name: Last outcome per asset
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: asset
                  header: Asset
                  sort: asc
                - name: outcome
                  header: Outcome
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (asset, outcome) (virt_platform_autopilot_asset_outcome) == 1
      corrective_writes:
        kind: Panel
        spec:
          display:
            name: Corrective writes
            description: Server-side applies that created or corrected an object. A steady line for one object means something keeps changing it.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
              yAxis:
                format:
                  unit: decimal
                min: 0
              visual:
                display: bar
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: sum by (kind, {{ $objNs }}, name) (increase(virt_platform_autopilot_corrective_writes_total[$__rate_interval])) > 0
                    seriesNameFormat: "{{`{{kind}}`}} {{`{{`}}{{ $objNs }}{{`}}`}}/{{`{{name}}`}}"
      drift:
        kind: Panel
        spec:
          display:
            name: Drift detected
            description: Drift seen in the watch cache. confirmed=false means the server-side dry-run showed applying would change nothing (a default or a webhook), so nothing was written.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
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
                    query: sum by (confirmed) (increase(virt_platform_autopilot_drift_detected_total[$__rate_interval]))
                    seriesNameFormat: "confirmed={{`{{confirmed}}`}}"
      top_drifting:
        kind: Panel
        spec:
          display:
            name: Most corrected objects, last hour
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: kind
                  header: Kind
                - name: {{ $objNs }}
                  header: Namespace
                - name: name
                  header: Name
                - name: value
                  header: Writes (1h)
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
                    query: topk(10, sum by (kind, {{ $objNs }}, name) (increase(virt_platform_autopilot_corrective_writes_total[1h])) > 0)
      throttled:
        kind: Panel
        spec:
          display:
            name: Throttled objects
            description: Corrective writes paused because these field managers keep reverting the object (alert VirtPlatformAutopilotThrashing).
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: kind
                  header: Kind
                - name: {{ $objNs }}
                  header: Namespace
                - name: name
                  header: Name
                - name: opponent
                  header: Reverted by
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (kind, {{ $objNs }}, name, opponent) (virt_platform_autopilot_throttled) == 1
      invalid_annotations:
        kind: Panel
        spec:
          display:
            name: Invalid annotations
            description: User annotations the autopilot cannot use; the object is left untouched until they are fixed (unresolved_pointer is a warning).
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: kind
                  header: Kind
                - name: {{ $objNs }}
                  header: Namespace
                - name: name
                  header: Name
                - name: annotation
                  header: Annotation
                - name: reason
                  header: Reason
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (kind, {{ $objNs }}, name, annotation, reason) (virt_platform_autopilot_invalid_annotation) == 1
      missing_dependencies:
        kind: Panel
        spec:
          display:
            name: Missing dependencies
            description: Assets that would be active but whose API (CRD, gate CRD or operator namespace) is not installed.
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: asset
                  header: Asset
                - name: kind
                  header: Missing kind
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (asset, kind) (virt_platform_autopilot_missing_dependency) == 1
      tombstones:
        kind: Panel
        spec:
          display:
            name: Tombstones
            description: Objects of earlier releases being removed. Gone is done, Skipped is not provably ours, Error keeps failing (alert VirtPlatformAutopilotTombstoneStuck).
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: kind
                  header: Kind
                - name: {{ $objNs }}
                  header: Namespace
                - name: name
                  header: Name
                - name: status
                  header: Status
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (kind, {{ $objNs }}, name, status) (virt_platform_autopilot_tombstone_status) == 1
      customizations:
        kind: Panel
        spec:
          display:
            name: Customized objects
            description: Objects an admin patched, masked (ignore-fields) or took over (unmanaged); the support "tainted" signal.
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: asset
                  header: Asset
                - name: kind
                  header: Kind
                - name: {{ $objNs }}
                  header: Namespace
                - name: name
                  header: Name
                - name: type
                  header: Customization
                - name: timestamp
                  hide: true
                - name: value
                  hide: true
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (asset, kind, {{ $objNs }}, name, type) (virt_platform_autopilot_customization_info) == 1
      idle:
        kind: Panel
        spec:
          display:
            name: Idle
            description: 1 while nothing is written or deleted, by reason (no HCO CRD or version, no HCO, HCO terminating, paused).
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
                max: 1
              visual:
                display: line
                areaOpacity: 0.3
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: max by (reason) (virt_platform_autopilot_idle)
                    seriesNameFormat: "{{`{{reason}}`}}"
      reconcile_duration:
        kind: Panel
        spec:
          display:
            name: Reconcile duration
            description: Time for a full reconcile of every asset.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
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
                    query: histogram_quantile(0.5, sum by (le) (rate(virt_platform_autopilot_reconcile_duration_seconds_bucket[$__rate_interval])))
                    seriesNameFormat: p50
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    query: histogram_quantile(0.99, sum by (le) (rate(virt_platform_autopilot_reconcile_duration_seconds_bucket[$__rate_interval])))
                    seriesNameFormat: p99
      api_requests:
        kind: Panel
        spec:
          display:
            name: API requests by verb
            description: Requests the autopilot sends to the API server; flat while nothing drifts.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
              yAxis:
                format:
                  unit: decimal
                min: 0
              visual:
                display: line
          queries:
            - kind: TimeSeriesQuery
              spec:
                plugin:
                  kind: PrometheusTimeSeriesQuery
                  spec:
                    # rest_client_requests_total is every controller's metric:
                    # keep only the target that also exports the autopilot's.
                    query: sum by (method) (rate(rest_client_requests_total[$__rate_interval]) and on (job, instance) virt_platform_autopilot_reconcile_duration_seconds_count)
                    seriesNameFormat: "{{`{{method}}`}}"
    layouts:
      - kind: Grid
        spec:
          display:
            title: Convergence
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/compliant"}}
            - {x: 6, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/attention"}}
            - {x: 12, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/by_choice"}}
            - {x: 18, y: 0, width: 6, height: 4, content: {$ref: "#/spec/panels/compliance_ratio"}}
            - {x: 0, y: 4, width: 14, height: 9, content: {$ref: "#/spec/panels/outcomes"}}
            - {x: 14, y: 4, width: 10, height: 9, content: {$ref: "#/spec/panels/asset_outcomes"}}
      - kind: Grid
        spec:
          display:
            title: Drift and corrective writes
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/corrective_writes"}}
            - {x: 12, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/drift"}}
            - {x: 0, y: 8, width: 24, height: 7, content: {$ref: "#/spec/panels/top_drifting"}}
      - kind: Grid
        spec:
          display:
            title: Waiting for a person
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 12, height: 6, content: {$ref: "#/spec/panels/throttled"}}
            - {x: 12, y: 0, width: 12, height: 6, content: {$ref: "#/spec/panels/invalid_annotations"}}
            - {x: 0, y: 6, width: 12, height: 6, content: {$ref: "#/spec/panels/missing_dependencies"}}
            - {x: 12, y: 6, width: 12, height: 6, content: {$ref: "#/spec/panels/tombstones"}}
            - {x: 0, y: 12, width: 24, height: 6, content: {$ref: "#/spec/panels/customizations"}}
      - kind: Grid
        spec:
          display:
            title: Engine
            collapse:
              open: false
          items:
            - {x: 0, y: 0, width: 8, height: 7, content: {$ref: "#/spec/panels/idle"}}
            - {x: 8, y: 0, width: 8, height: 7, content: {$ref: "#/spec/panels/reconcile_duration"}}
            - {x: 16, y: 0, width: 8, height: 7, content: {$ref: "#/spec/panels/api_requests"}}
