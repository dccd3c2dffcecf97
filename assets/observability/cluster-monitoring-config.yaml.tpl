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
{{- /* A key that is set must be a map (null counts as unset); ksmd.enabled
  set to false is the admin's explicit choice: the render fails, naming it,
  rather than override it (turn the switch off, or remove the setting). */ -}}
{{- $ne := dict -}}
{{- if and (hasKey $cfg "nodeExporter") (not (kindIs "invalid" (get $cfg "nodeExporter"))) }}{{ $ne = get $cfg "nodeExporter" }}{{ end -}}
{{- if not (kindIs "map" $ne) }}{{ fail "cluster-monitoring-config: nodeExporter is not a map" }}{{ end -}}
{{- $collectors := dict -}}
{{- if and (hasKey $ne "collectors") (not (kindIs "invalid" (get $ne "collectors"))) }}{{ $collectors = get $ne "collectors" }}{{ end -}}
{{- if not (kindIs "map" $collectors) }}{{ fail "cluster-monitoring-config: nodeExporter.collectors is not a map" }}{{ end -}}
{{- $ksmd := dict -}}
{{- if and (hasKey $collectors "ksmd") (not (kindIs "invalid" (get $collectors "ksmd"))) }}{{ $ksmd = get $collectors "ksmd" }}{{ end -}}
{{- if not (kindIs "map" $ksmd) }}{{ fail "cluster-monitoring-config: nodeExporter.collectors.ksmd is not a map" }}{{ end -}}
{{- $enabled := get $ksmd "enabled" -}}
{{- if and (hasKey $ksmd "enabled") (not (and (kindIs "bool" $enabled) $enabled)) -}}
{{- fail "cluster-monitoring-config sets nodeExporter.collectors.ksmd.enabled to something other than true: an admin's choice the autopilot does not override (remove it, or turn enable-ksm-zero-only off)" -}}
{{- end -}}
{{- $out := $raw -}}
{{- if not (hasKey $ksmd "enabled") -}}
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
