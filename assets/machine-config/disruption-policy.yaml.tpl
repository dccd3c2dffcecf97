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
{{- $entries := list
  (dict "path" "/usr/local/bin/kubevirt-ksm-zero-only" "actions" (list (dict "type" "Restart" "restart" (dict "serviceName" "kubevirt-ksm-zero-only.service"))))
  (dict "path" "/usr/local/bin/kubevirt-vm-shutdown" "actions" (list (dict "type" "Restart" "restart" (dict "serviceName" "kubevirt-vm-shutdown.service"))))
-}}
{{- /* An entry someone else wrote for one of these paths is theirs: kept,
  not overwritten (server-side apply would force it). An entry equal to
  this one is written again (shared ownership). A later release that
  changes an action must count its earlier action as its own here. */ -}}
{{- $theirs := dict -}}
{{- with .Live }}{{ range (dig "spec" "nodeDisruptionPolicy" "files" list .) }}{{ $_ := set $theirs (toString .path) (toJson .actions) }}{{ end }}{{ end -}}
{{- $files := list -}}
{{- range $entries -}}
{{- $live := get $theirs .path -}}
{{- if or (eq $live "") (eq $live (toJson .actions)) }}{{ $files = append $files . }}{{ end -}}
{{- end -}}
apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  nodeDisruptionPolicy:
    files: {{ $files | toJson }}
