{{- /*
  The one NodeHealthCheck for workers. NHC forbids two checks selecting the
  same nodes (docs/configuration.md: "Multiple configurations must not
  select an overlapping node set"), so fencing is not a second NHC: it
  changes how this one remediates.

  Baseline: self node remediation (the template the SNR operator creates).

  With the node-remediation switch, and once the admin has created the
  FenceAgentsRemediationTemplate (BMC addresses and credentials are theirs,
  and FAR's webhook rejects a template without them), remediation escalates:
  BMC fencing first, SNR second. A fenced node is provably off, so its pods
  are deleted at once; SNR only starts when fencing fails (FAR reports
  Succeeded=False and NHC moves on without waiting) or the node has not come
  back 15 minutes after a power cycle. A template whose BMC status check
  failed (FenceAgentStatusValidationSucceeded=False) is not used.

  With storage-based detection switched on, a node the other nodes stop
  seeing on the shared storage is unhealthy too (the condition is only ever
  set by the SBR agents the sbr-detect-only asset deploys).

  minHealthy 51% stops remediation when most of the cluster is unhealthy: that
  is a network, storage or control-plane problem, not a node one.
  Cluster-scoped: no namespace.
*/ -}}
{{- $snr := dict "apiVersion" "self-node-remediation.medik8s.io/v1alpha1" "kind" "SelfNodeRemediationTemplate" "name" "self-node-remediation-automatic-strategy-template" "namespace" "openshift-workload-availability" -}}
{{- $farRef := dict "apiVersion" "fence-agents-remediation.medik8s.io/v1alpha1" "kind" "FenceAgentsRemediationTemplate" "name" "fenceagentsremediationtemplate-default" "namespace" "openshift-workload-availability" -}}
{{- $fencing := false -}}
{{- if switch "enable-node-remediation" -}}
{{- $far := lookup $farRef.apiVersion $farRef.kind $farRef.namespace $farRef.name -}}
{{- if $far -}}
{{- $fencing = true -}}
{{- range (dig "status" "conditions" list $far) -}}
{{- if and (eq (dig "type" "" .) "FenceAgentStatusValidationSucceeded") (eq (dig "status" "" .) "False") -}}
{{- $fencing = false -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* Decided by the switch, not by the SBR object's existence: the two
  assets then converge in one pass, and turning the switch off drops the
  condition in the same reconcile that deletes the SBR config. */ -}}
{{- $sbr := switch "enable-sbr-detection" -}}
apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  name: kubevirt-workers
spec:
  minHealthy: 51%
  selector:
    matchExpressions:
      - key: node-role.kubernetes.io/worker
        operator: Exists
      - key: node-role.kubernetes.io/control-plane
        operator: DoesNotExist
{{- if $fencing }}
  escalatingRemediations:
    # BMC power cycle: the node is known to be off before its pods go.
    # 15m covers a bare-metal reboot and rejoin, so SNR never starts on a
    # node that is merely booting; a failed fence escalates at once.
    - order: 1
      timeout: 15m
      remediationTemplate: {{ $farRef | toJson }}
    # Fallback when the BMC cannot be reached. 10m is NHC's default
    # remediation duration for a single remediator.
    - order: 2
      timeout: 10m
      remediationTemplate: {{ $snr | toJson }}
{{- else }}
  remediationTemplate: {{ $snr | toJson }}
{{- end }}
  unhealthyConditions:
    - type: Ready
      status: "False"
      duration: 300s
    - type: Ready
      status: Unknown
      duration: 300s
{{- if $sbr }}
    # Set by the SBR agents on a peer that missed maxConsecutiveFailures
    # heartbeats (7 x 15s); they turn it to Unknown about 125s later, so NHC
    # must act well inside that window.
    - type: SBRStorageUnhealthy
      status: "True"
      duration: 30s
{{- end }}
