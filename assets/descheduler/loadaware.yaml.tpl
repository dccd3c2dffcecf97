{{- /*
  Load-aware rebalancing. The profile is the best one the installed
  descheduler operator offers, read from its CRD's spec.profiles enum:
  KubeVirtRelieveAndMigrate (GA, OCP 4.21+), DevKubeVirtRelieveAndMigrate
  (4.19/4.20), else LongLifecycle. Without a readable CRD (offline render)
  the newest profile is assumed.

  An admin's AffinityAndTaints and SoftTopologyAndDuplicates profiles are
  kept (read from the live object): they combine with every choice above.
  Any other profile conflicts with load-aware rebalancing and is dropped.

  Actual utilization: the metric the utilization plugin balances on. Each
  named profile queries a recording rule of the operator's own PrometheusRule
  openshift-kube-descheduler-operator/descheduler-rules, which the operator
  writes when it reconciles this object and which ships with the profiles the
  same operator build understands. So the best profile whose rule is recorded
  is one the operator accepts:
    PrometheusCPUMemoryCombinedProfile (CPU and memory, utilization and
      pressure; rules from 4.21), else
    PrometheusCPUCombined (CPU utilization and pressure; rules from 4.18),
    else none (the operator's default).
  The KubeVirt profiles default to exactly these (4.19/4.20: CPUCombined,
  4.21+: CPUMemoryCombined); LongLifecycle has no metric default and gains
  real-load balancing. Until the operator has written its rules (first
  reconcile) the field is left out and the operator's default applies.
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
{{- $records := list -}}
{{- with lookup "monitoring.coreos.com/v1" "PrometheusRule" "openshift-kube-descheduler-operator" "descheduler-rules" -}}
{{- range (dig "spec" "groups" list .) -}}
{{- range (dig "rules" list .) -}}
{{- $records = append $records (dig "record" "" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $actual := "" -}}
{{- if crdHasField $crd "spec.profileCustomizations.devActualUtilizationProfile" -}}
{{- if has "descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m" $records -}}
{{- $actual = "PrometheusCPUMemoryCombinedProfile" -}}
{{- else if has "descheduler:combined_utilization_and_pressure:avg1m" $records -}}
{{- $actual = "PrometheusCPUCombined" -}}
{{- end -}}
{{- end -}}
{{- $deviation := and (not (hasPrefix "Long" $profile)) (crdHasField $crd "spec.profileCustomizations.devDeviationThresholds") -}}
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
{{- if or (hasPrefix "Long" $profile) $deviation $actual }}
  profileCustomizations:
{{- if hasPrefix "Long" $profile }}
    # KubeVirt profiles turn background evictions on by themselves; for
    # LongLifecycle it must be asked for, so VMs live-migrate.
    devEnableEvictionsInBackground: true
{{- end }}
{{- if $deviation }}
    # Only nodes above average load give VMs away (0% low, 10% high).
    devDeviationThresholds: AsymmetricLow
{{- end }}
{{- if $actual }}
    # Balance on measured load (see above), the best metric the operator records.
    devActualUtilizationProfile: {{ $actual | quote }}
{{- end }}
{{- end }}
  evictionLimits:
    # Never evict more VMs per run than live migration moves at once.
    total: {{ dig "parallelMigrationsPerCluster" 5 $lm | integer "HCO spec.virtualization.liveMigrationConfig.parallelMigrationsPerCluster" }}
{{- if crdHasField $crd "spec.evictionLimits.node" }}
    node: {{ dig "parallelOutboundMigrationsPerNode" 2 $lm | integer "HCO spec.virtualization.liveMigrationConfig.parallelOutboundMigrationsPerNode" }}
{{- end }}
