{{- /*
  Load-aware rebalancing. The profile is the best one the installed
  descheduler operator offers, read from its CRD's spec.profiles enum:
  KubeVirtRelieveAndMigrate (GA, OCP 4.21+), DevKubeVirtRelieveAndMigrate
  (4.19/4.20), else LongLifecycle. Without a readable CRD (offline render)
  the newest profile is assumed.

  An admin's AffinityAndTaints and SoftTopologyAndDuplicates profiles are
  kept (read from the live object): they combine with every choice above.
  Any other profile conflicts with load-aware rebalancing and is dropped.
*/ -}}
{{- $crd := "kubedeschedulers.operator.openshift.io" -}}
{{- $profile := crdEnumFirst $crd "spec.profiles" "KubeVirtRelieveAndMigrate" "DevKubeVirtRelieveAndMigrate" "LongLifecycle" | default "KubeVirtRelieveAndMigrate" -}}
{{- $profiles := list -}}
{{- range (dig "spec" "profiles" list (.Live | default dict)) -}}
{{- if has . (list "AffinityAndTaints" "SoftTopologyAndDuplicates") -}}
{{- $profiles = append $profiles . -}}
{{- end -}}
{{- end -}}
{{- $profiles = append $profiles $profile -}}
{{- $lm := dig "spec" "virtualization" "liveMigrationConfig" dict .HCO -}}
apiVersion: operator.openshift.io/v1
kind: KubeDescheduler
metadata:
  name: cluster
  namespace: openshift-kube-descheduler-operator
spec:
  managementState: Managed
  mode: Automatic
  deschedulingIntervalSeconds: 60
  profiles: {{ $profiles | toJson }}
{{- if hasPrefix "Long" $profile }}
  profileCustomizations:
    # KubeVirt profiles turn background evictions on by themselves; for
    # LongLifecycle it must be asked for, so VMs live-migrate.
    devEnableEvictionsInBackground: true
{{- else if crdHasField $crd "spec.profileCustomizations.devDeviationThresholds" }}
  profileCustomizations:
    # Only nodes above average load give VMs away (0% low, 10% high).
    devDeviationThresholds: AsymmetricLow
{{- end }}
  evictionLimits:
    # Never evict more VMs per run than live migration moves at once.
    total: {{ dig "parallelMigrationsPerCluster" 5 $lm }}
{{- if crdHasField $crd "spec.evictionLimits.node" }}
    node: {{ dig "parallelOutboundMigrationsPerNode" 2 $lm }}
{{- end }}
