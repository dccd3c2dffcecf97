{{- /*
  Storage-based detection: the SBR agents write heartbeats to a file on a
  shared ReadWriteMany volume and mark a peer they stop seeing with the node
  condition SBRStorageUnhealthy, which the kubevirt-workers NodeHealthCheck
  reads. detectOnlyMode Enabled keeps SBR from remediating itself: no armed
  watchdog, no self-fence, no fence messages; NHC and its remediators act.

  The volume's class: the HCO annotation platform.kubevirt.io/sbr-storage-class,
  else the class this object already uses while it still qualifies (SBR never
  moves its PVC to a new class), else the alphabetically first StorageProfile
  whose status offers ReadWriteMany with volumeMode Filesystem (the heartbeat
  is a file on a mounted volume). CDI names each profile after its class.
  Without a class SBR fails to reconcile ("no shared storage configured"),
  so the catalog makes this asset wait for one; the fail below is a guard.

  An SBR CRD without detectOnlyMode would prune the field and arm the
  watchdog: rendering stops instead.
*/ -}}
{{- $crd := "storagebasedremediationconfigs.storage-based-remediation.medik8s.io" -}}
{{- if and (crdHasField $crd "spec") (not (crdHasField $crd "spec.detectOnlyMode")) -}}
{{- fail "the installed StorageBasedRemediationConfig CRD has no spec.detectOnlyMode: refusing to deploy SBR with an armed watchdog" -}}
{{- end -}}
{{- /* Class names are checked where they are read: the annotation's (an
  invalid one makes the asset Invalid) and the profiles'. The live class only
  counts when it is one of the candidates. */ -}}
{{- $candidates := storageClassesOffering "ReadWriteMany" "Filesystem" -}}
{{- $class := storageClassAnnotation "platform.kubevirt.io/sbr-storage-class" -}}
{{- if not $class -}}
{{- $live := dig "spec" "sharedStorageClass" "" (.Live | default dict) -}}
{{- if has $live $candidates -}}
{{- $class = $live -}}
{{- else if $candidates -}}
{{- $class = first $candidates -}}
{{- end -}}
{{- end -}}
{{- /* With an HCO (a real reconcile) a missing class stops the render; without
  one (kind and RBAC discovery render every template with no facts) the
  field is left out. */ -}}
{{- if and (not $class) .HCO -}}
{{- fail "no StorageProfile offers ReadWriteMany Filesystem; name a class with the HCO annotation platform.kubevirt.io/sbr-storage-class" -}}
{{- end -}}
apiVersion: storage-based-remediation.medik8s.io/v1alpha1
kind: StorageBasedRemediationConfig
metadata:
  name: kubevirt-detect-only
  # The operator's documented namespace; the agent DaemonSet and the 10Mi
  # shared PVC are created next to this object.
  namespace: openshift-workload-availability
spec:
  # Detect and report only; remediation stays with the NodeHealthCheck.
  detectOnlyMode: Enabled
{{- with $class }}
  # RWX class for the heartbeat file (see above).
  sharedStorageClass: {{ . | quote }}
{{- end }}
