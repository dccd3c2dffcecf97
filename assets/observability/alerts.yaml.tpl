{{- /*
  Alerts on the autopilot's own metrics. Each alert links its runbook; the
  rules are unit tested with promtool (test/alerts).
*/ -}}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: virt-platform-autopilot-alerts
  namespace: {{ .Namespace }}
spec:
  groups:
    - name: virt-platform-autopilot
      rules:
        - alert: VirtPlatformAutopilotSyncFailed
          expr: max by (asset) (virt_platform_autopilot_asset_outcome{outcome="Failed"}) == 1
          for: 15m
          labels:
            severity: warning
          annotations:
            summary: "Asset {{`{{ $labels.asset }}`}} has not converged for 15 minutes."
            description: "The autopilot cannot render or apply asset {{`{{ $labels.asset }}`}}; its object may be drifting from the platform baseline."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotSyncFailed.md
        - alert: VirtPlatformAutopilotThrashing
          expr: max by (kind, namespace, name, opponent) (virt_platform_autopilot_throttled) == 1
          for: 10m
          labels:
            severity: warning
          annotations:
            summary: "Another actor keeps reverting {{`{{ $labels.kind }}`}} {{`{{ $labels.namespace }}`}}/{{`{{ $labels.name }}`}}."
            description: "Corrective writes are paused: field manager(s) {{`{{ $labels.opponent }}`}} keep changing fields the autopilot manages."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotThrashing.md
        - alert: VirtPlatformAutopilotMissingDependency
          expr: max by (asset, kind) (virt_platform_autopilot_missing_dependency) == 1
          for: 30m
          labels:
            severity: info
          annotations:
            summary: "Asset {{`{{ $labels.asset }}`}} is on but its {{`{{ $labels.kind }}`}} API is not installed."
            description: "Install the operator providing {{`{{ $labels.kind }}`}}, or exclude the asset; the rest of the platform converges meanwhile."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotMissingDependency.md
        - alert: VirtPlatformAutopilotTombstoneStuck
          expr: max by (kind, namespace, name) (virt_platform_autopilot_tombstone_status{status="Error"}) == 1
          for: 30m
          labels:
            severity: warning
          annotations:
            summary: "Obsolete {{`{{ $labels.kind }}`}} {{`{{ $labels.namespace }}`}}/{{`{{ $labels.name }}`}} cannot be deleted."
            description: "The autopilot has failed to delete an object an earlier release created for 30 minutes."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotTombstoneStuck.md
        - alert: VirtPlatformAutopilotInvalidAnnotation
          expr: max by (kind, namespace, name, annotation, reason) (virt_platform_autopilot_invalid_annotation) == 1
          for: 10m
          labels:
            severity: warning
          annotations:
            summary: "Annotation {{`{{ $labels.annotation }}`}} on {{`{{ $labels.kind }}`}} {{`{{ $labels.namespace }}`}}/{{`{{ $labels.name }}`}} is invalid ({{`{{ $labels.reason }}`}})."
            description: "The object is left exactly as it is until the annotation is fixed."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotInvalidAnnotation.md
        - alert: VirtPlatformAutopilotBesideShippedAutopilot
          expr: max by (state) (virt_platform_autopilot_shipped_autopilot{state=~"acting|unknown"}) == 1
          for: 10m
          labels:
            severity: warning
          annotations:
            summary: "The autopilot OpenShift Virtualization ships is {{`{{ $labels.state }}`}}: this autopilot writes nothing."
            description: "Both write the same objects under the same field manager name, so this one holds every write while the shipped one acts or cannot be judged. The HyperConverged's ShippedAutopilot event and /debug/health name its Deployment and the step to hand over."
            runbook_url: https://github.com/kubevirt/virt-platform-autopilot/blob/main/docs/runbooks/VirtPlatformAutopilotBesideShippedAutopilot.md
