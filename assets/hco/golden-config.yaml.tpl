{{- /*
  The golden HyperConverged config. Only fields with a reason to differ from,
  or to pin, the HCO defaults belong here; everything else stays the user's.
  Switches (HCO annotations platform.kubevirt.io/<switch>: "true") turn on
  the higher-density and AAQ parts.
*/ -}}
apiVersion: hco.kubevirt.io/v1
kind: HyperConverged
metadata:
  name: kubevirt-hyperconverged
  namespace: {{ .Namespace }}
spec:
  deployment:
    # Refuse to uninstall while VMs exist: an accidental uninstall must never
    # take running workloads down with it.
    uninstallStrategy: BlockUninstallIfWorkloadsExist
{{- if switch "enable-aaq" }}
    # Application-Aware Quota: quotas that count a VM's real footprint, not
    # its launcher pod's. HCO deploys and owns the AAQ operator.
    applicationAwareConfig:
      enable: true
{{- end }}
  virtualization:
    liveMigrationConfig:
      # Two outbound migrations per node (HCO default 1) drain a node for
      # maintenance or load-aware rebalancing twice as fast, while five per
      # cluster keeps the migration network from saturating.
      parallelMigrationsPerCluster: 5
      parallelOutboundMigrationsPerNode: 2
{{- if switch "enable-higher-density" }}
    # Merge identical guest pages on every node.
    ksmConfiguration:
      nodeLabelSelector: {}
{{- if hcoSkipsWasp }}
    higherWorkloadDensity:
      # Above 120% only with swap as a safety net for memory spikes: on
      # every node that runs VMs, as their kubelets report it (the swap
      # MachineConfig turns swap on only where an OCPSWAP partition is).
      memoryOvercommitPercentage: {{ if and (not (excluded "MachineConfig" "" "90-worker-kubevirt-swap")) swapOnEveryVMNode }}150{{ else }}120{{ end }}
{{- end }}
    # Memory is overcommitted only while the HCO's switch keeps it from
    # deploying the WASP agent (platform.kubevirt.io/autopilot "true"):
    # above 100% the HCO otherwise deploys it, a privileged second swap
    # stack beside the kubelet's LimitedSwap (pkg/hcoreact). The features
    # view says so.
{{- end }}
