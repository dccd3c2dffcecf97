{{- /*
  Fewer reboots (feature node-disruption-policy): MCO's node disruption
  policy (MachineConfiguration/cluster spec.nodeDisruptionPolicy) tells its
  daemon what to do instead of a drain and reboot when a MachineConfig
  changes only files and units the policy covers. This declares an entry
  only where the action alone puts every change of that file into effect,
  and MCO's rules keep creation and removal rebooting: each entry is a
  script whose unit has no entry, and a changed, added or removed unit with
  no entry reboots (calculatePostConfigChangeNodeDisruptionActionFromMCDiffs).

  - /usr/local/bin/kubevirt-ksm-zero-only: restart its oneshot unit, which
    runs the new script; the script writes every KSM knob it manages from
    scratch, and nothing else writes them while the feature is on (the HCO
    does not configure KSM then).
  - /usr/local/bin/kubevirt-vm-shutdown: restart kubevirt-vm-shutdown.service,
    the long-running process that holds the shutdown lock (bash keeps
    reading the old file until it is restarted); the boot-time uncordon
    service reads the new file at the next boot, when it runs.

  Everything else the autopilot ships reboots, by decision (docs/assets.md):
  kernel arguments always do; the THP script is not re-run at runtime
  because TuneD, which runs after it at boot, must keep the last word; the
  swap unit, slice drop-in and kubelet drop-in, the logind drop-in and the
  KubeletConfig's kubelet.conf take effect only from a clean start.

  Shared: merged into MCO's singleton by server-side apply, which keeps
  every other entry (files is a map keyed by path); never deleted.
*/ -}}
{{- /* Each entry, with the MachineConfigs that ship its file and unit. */ -}}
{{- $entries := list
  (dict "path" "/usr/local/bin/kubevirt-ksm-zero-only" "unit" "kubevirt-ksm-zero-only.service" "mcs" (list "90-worker-kubevirt-ksm" "90-master-kubevirt-ksm"))
  (dict "path" "/usr/local/bin/kubevirt-vm-shutdown" "unit" "kubevirt-vm-shutdown.service" "mcs" (list "95-worker-kubevirt-vm-shutdown"))
-}}
{{- /* Someone else's entry is theirs: one for the same path with other
  actions, or one for a directory above it (MCO takes the longest match,
  so an exact entry here would override the admin's directory rule).
  Kept, not overwritten or shadowed. An entry equal to this one is written
  again (shared ownership). A later release that changes an action must
  count its earlier action as its own here. */ -}}
{{- $live := list -}}
{{- with .Live }}{{ $live = dig "spec" "nodeDisruptionPolicy" "files" list . }}{{ end -}}
{{- $files := list -}}
{{- range $entries -}}
{{- $e := . -}}
{{- $actions := list (dict "type" "Restart" "restart" (dict "serviceName" $e.unit)) -}}
{{- $keep := true -}}
{{- range $live -}}
{{- $p := toString .path -}}
{{- if and (eq $p $e.path) (ne (toJson .actions) (toJson $actions)) }}{{ $keep = false }}{{ end -}}
{{- if and (ne $p $e.path) (hasPrefix (printf "%s/" (trimSuffix "/" $p)) $e.path) }}{{ $keep = false }}{{ end -}}
{{- end -}}
{{- /* A restart starts a unit an admin disabled and fails on one they
  masked (MCO then degrades the node): while a MachineConfig of ours ships
  the unit disabled or masked (a patch), changes of the file reboot. */ -}}
{{- range $e.mcs -}}
{{- with lookup "machineconfiguration.openshift.io/v1" "MachineConfig" "" . -}}
{{- range (dig "spec" "config" "systemd" "units" list .) -}}
{{- if and (eq (toString .name) $e.unit) (or (not (eq (toString (get . "enabled")) "true")) (eq (toString (get . "mask")) "true")) }}{{ $keep = false }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $keep }}{{ $files = append $files (dict "path" $e.path "actions" $actions) }}{{ end -}}
{{- end -}}
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  nodeDisruptionPolicy:
    files: {{ $files | toJson }}
