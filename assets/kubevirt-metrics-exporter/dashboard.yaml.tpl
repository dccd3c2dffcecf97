{{- /*
  VM storage latency from the exporter, worst VMs and volumes first (topk),
  plus the exporter's own health. In the exporter's namespace, with the
  datasource asset kubevirt-metrics-exporter-datasource.

  Every exporter metric name is here, from the vendor's README and
  collectors (pkg/qmp/collector.go, pkg/qga/metrics.go, pkg/ebpf/collector.go),
  so a rename upstream is one edit. Labels kept by the PodMonitor's
  honorLabels: the VM's namespace, name (VMI), disk, operation.
  Latency histograms default to 10ms/100ms/1s buckets (--boundaries):
  quantiles are coarse, read them as "under 10ms, under 100ms, under 1s".
*/ -}}
{{- $job := "kubevirt-metrics-exporter" -}}
{{- $vmLatency := "kubevirt_vmi_storage_io_latency_seconds_bucket" -}}
{{- $queueInuse := "kubevirt_vmi_storage_queue_inuse" -}}
{{- $queueSize := "kubevirt_vmi_storage_queue_size" -}}
{{- $guestLatency := "kubevirt_vmi_storage_guest_latency_avg_seconds" -}}
{{- $blockLatency := "kme_block_io_latency_seconds_bucket" -}}
{{- $nfsLatency := "kme_nfs_io_latency_seconds_bucket" -}}
{{- $subsystem := "kme_subsystem_active" -}}
{{- $qmpLastPoll := "kme_qmp_last_poll_timestamp_seconds" -}}
{{- $top := 10 -}}
apiVersion: perses.dev/v1alpha2
kind: PersesDashboard
metadata:
  name: kubevirt-vm-storage-latency
  namespace: kubevirt-metrics-exporter
spec:
  config:
    display:
      name: VM storage latency
      description: Per-disk I/O latency seen by QEMU, the guest and the host, from kubevirt-metrics-exporter.
    duration: 3h
    refreshInterval: 1m
    panels:
      write_latency:
        kind: Panel
        spec:
          display:
            name: Slowest VM disks, write p99 (QEMU)
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, histogram_quantile(0.99, sum by (namespace, name, disk, le) (rate({{ $vmLatency }}{operation="write"}[$__rate_interval]))))
                    seriesNameFormat: "{{`{{namespace}}/{{name}} {{disk}}`}}"
      read_latency:
        kind: Panel
        spec:
          display:
            name: Slowest VM disks, read p99 (QEMU)
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, histogram_quantile(0.99, sum by (namespace, name, disk, le) (rate({{ $vmLatency }}{operation="read"}[$__rate_interval]))))
                    seriesNameFormat: "{{`{{namespace}}/{{name}} {{disk}}`}}"
      flush_latency:
        kind: Panel
        spec:
          display:
            name: Slowest VM disks, flush p99 (QEMU)
            description: Flushes are what databases and journaling file systems wait for.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, histogram_quantile(0.99, sum by (namespace, name, disk, le) (rate({{ $vmLatency }}{operation="flush"}[$__rate_interval]))))
                    seriesNameFormat: "{{`{{namespace}}/{{name}} {{disk}}`}}"
      queue_saturation:
        kind: Panel
        spec:
          display:
            name: Fullest virtqueues
            description: In-flight requests over virtqueue capacity; near 100% the guest is queueing I/O the storage cannot absorb.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
              yAxis:
                format:
                  unit: percent-decimal
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
                    query: topk({{ $top }}, sum by (namespace, name, disk, bus) ({{ $queueInuse }}) / (sum by (namespace, name, disk, bus) ({{ $queueSize }}) > 0))
                    seriesNameFormat: "{{`{{namespace}}/{{name}} {{bus}} {{disk}}`}}"
      guest_latency:
        kind: Panel
        spec:
          display:
            name: Slowest disks seen by Windows guests
            description: Average latency from the guest's own counters (guest agent, Windows only); high here but not in QEMU means queueing inside the guest.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, max by (namespace, name, disk, operation) ({{ $guestLatency }}))
                    seriesNameFormat: "{{`{{namespace}}/{{name}} {{disk}} {{operation}}`}}"
      block_latency:
        kind: Panel
        spec:
          display:
            name: Slowest PVCs on host block devices, p99 (eBPF)
            description: High in QEMU but low here points at virtio or QEMU; high in both at the storage.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, histogram_quantile(0.99, sum by (namespace, persistentvolumeclaim, operation, le) (rate({{ $blockLatency }}[$__rate_interval]))))
                    seriesNameFormat: "{{`{{namespace}}/{{persistentvolumeclaim}} {{operation}}`}}"
      nfs_latency:
        kind: Panel
        spec:
          display:
            name: Slowest PVCs on NFS, p99 (eBPF)
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: bottom
                mode: table
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
                    query: topk({{ $top }}, histogram_quantile(0.99, sum by (namespace, persistentvolumeclaim, operation, le) (rate({{ $nfsLatency }}[$__rate_interval]))))
                    seriesNameFormat: "{{`{{namespace}}/{{persistentvolumeclaim}} {{operation}}`}}"
      exporters_up:
        kind: Panel
        spec:
          display:
            name: Exporters scraped
            description: Nodes whose exporter Prometheus scrapes successfully.
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
                    query: sum(up{job="{{ $job }}"}) or vector(0)
      subsystems:
        kind: Panel
        spec:
          display:
            name: eBPF subsystems not loaded
            description: Nodes where block or NFS tracing failed to load (kernel without the tracepoints, SELinux, missing capability).
          plugin:
            kind: Table
            spec:
              density: compact
              columnSettings:
                - name: node
                  header: Node
                - name: subsystem
                  header: Subsystem
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
                    query: max by (node, subsystem) ({{ $subsystem }}{job="{{ $job }}"}) == 0
      qmp_staleness:
        kind: Panel
        spec:
          display:
            name: Age of the last QEMU poll, by node
            description: QEMU is polled every minute; a growing line means a node's VM latency is stale.
          plugin:
            kind: TimeSeriesChart
            spec:
              legend:
                position: right
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
                    query: max by (node) (time() - {{ $qmpLastPoll }}{job="{{ $job }}"})
                    seriesNameFormat: "{{`{{node}}`}}"
    layouts:
      - kind: Grid
        spec:
          display:
            title: Inside QEMU (per VM disk)
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/write_latency"}}
            - {x: 12, y: 0, width: 12, height: 8, content: {$ref: "#/spec/panels/read_latency"}}
            - {x: 0, y: 8, width: 12, height: 8, content: {$ref: "#/spec/panels/flush_latency"}}
            - {x: 12, y: 8, width: 12, height: 8, content: {$ref: "#/spec/panels/queue_saturation"}}
      - kind: Grid
        spec:
          display:
            title: In the guest and on the host
            collapse:
              open: true
          items:
            - {x: 0, y: 0, width: 8, height: 8, content: {$ref: "#/spec/panels/guest_latency"}}
            - {x: 8, y: 0, width: 8, height: 8, content: {$ref: "#/spec/panels/block_latency"}}
            - {x: 16, y: 0, width: 8, height: 8, content: {$ref: "#/spec/panels/nfs_latency"}}
      - kind: Grid
        spec:
          display:
            title: Exporter health
            collapse:
              open: false
          items:
            - {x: 0, y: 0, width: 6, height: 6, content: {$ref: "#/spec/panels/exporters_up"}}
            - {x: 6, y: 0, width: 8, height: 6, content: {$ref: "#/spec/panels/subsystems"}}
            - {x: 14, y: 0, width: 10, height: 6, content: {$ref: "#/spec/panels/qmp_staleness"}}
