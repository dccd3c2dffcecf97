{{- /*
  The golden HyperConverged config. Only fields with a reason to differ from,
  or to pin, the HCO defaults belong here; everything else stays the user's.
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
  virtualization:
    liveMigrationConfig:
      # Two outbound migrations per node (HCO default 1) drain a node for
      # maintenance or load-aware rebalancing twice as fast, while five per
      # cluster keeps the migration network from saturating.
      parallelMigrationsPerCluster: 5
      parallelOutboundMigrationsPerNode: 2
