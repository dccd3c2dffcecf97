{{- /*
  Load-aware rebalancing. The profile is the best one the installed
  descheduler operator offers, read from its CRD's spec.profiles enum:
  KubeVirtRelieveAndMigrate (GA, OCP 4.21+), DevKubeVirtRelieveAndMigrate
  (4.19/4.20), else LongLifecycle. Without a readable CRD (offline render)
  the newest profile is assumed.
*/ -}}
{{- $crd := "kubedeschedulers.operator.openshift.io" -}}
{{- $profile := crdEnumFirst $crd "spec.profiles" "KubeVirtRelieveAndMigrate" "DevKubeVirtRelieveAndMigrate" "LongLifecycle" | default "KubeVirtRelieveAndMigrate" -}}
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
  profiles:
    - {{ $profile }}
{{- if hasPrefix "Long" $profile }}
  profileCustomizations:
    devEnableEvictionsInBackground: true
{{- else if crdHasField $crd "spec.profileCustomizations.devDeviationThresholds" }}
  profileCustomizations:
    devDeviationThresholds: AsymmetricLow
{{- end }}
  evictionLimits:
    # Never evict more VMs per run than live migration can move at once.
    total: {{ dig "parallelMigrationsPerCluster" 5 $lm }}
{{- if crdHasField $crd "spec.evictionLimits.node" }}
    node: {{ dig "parallelOutboundMigrationsPerNode" 2 $lm }}
{{- end }}
