{{- /*
  node-exporter's ksmd collector for the ksm-zero-only feature, so ksmd's
  state (node_ksmd_run, pages_to_scan, sleep_seconds, full_scans_total)
  reaches Prometheus. The collector is off by default and switched on in the
  platform monitoring config: nodeExporter.collectors.ksmd.enabled
  (cluster-monitoring-operator pkg/manifests/types.go,
  NodeExporterCollectorKSMDConfig; manifests.go adds --collector.ksmd).

  The ConfigMap is the admin's (shared: never deleted); only that one key is
  ours. When the live config already enables it, config.yaml is written
  back byte for byte. Otherwise the live YAML is parsed, the key set, and
  the document written back: every setting kept, keys in sorted order,
  comments lost (a parsed document has none). Malformed YAML, or a
  nodeExporter, collectors or ksmd that is set but not a map, fails the
  render, and a failed render writes nothing: the monitoring operator
  parses this file strictly (UnmarshalStrict), so an unreadable config stays
  the admin's to fix.
*/ -}}
{{- $raw := "" -}}
{{- with .Live }}{{ $raw = dig "data" "config.yaml" "" . }}{{ end -}}
{{- $cfg := fromYaml $raw -}}
{{- $ne := get $cfg "nodeExporter" }}{{ if empty $ne }}{{ $ne = dict }}{{ end -}}
{{- if not (kindIs "map" $ne) }}{{ fail "cluster-monitoring-config: nodeExporter is not a map" }}{{ end -}}
{{- $collectors := get $ne "collectors" }}{{ if empty $collectors }}{{ $collectors = dict }}{{ end -}}
{{- if not (kindIs "map" $collectors) }}{{ fail "cluster-monitoring-config: nodeExporter.collectors is not a map" }}{{ end -}}
{{- $ksmd := get $collectors "ksmd" }}{{ if empty $ksmd }}{{ $ksmd = dict }}{{ end -}}
{{- if not (kindIs "map" $ksmd) }}{{ fail "cluster-monitoring-config: nodeExporter.collectors.ksmd is not a map" }}{{ end -}}
{{- $enabled := get $ksmd "enabled" -}}
{{- $out := $raw -}}
{{- if not (and (kindIs "bool" $enabled) $enabled) -}}
{{- $_ := set $ksmd "enabled" true -}}
{{- $_ := set $collectors "ksmd" $ksmd -}}
{{- $_ := set $ne "collectors" $collectors -}}
{{- $_ := set $cfg "nodeExporter" $ne -}}
{{- $out = printf "%s\n" (toYaml $cfg) -}}
{{- end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  # The monitoring operator reads exactly this object.
  name: cluster-monitoring-config
  namespace: openshift-monitoring
data:
  config.yaml: {{ $out | toJson }}
