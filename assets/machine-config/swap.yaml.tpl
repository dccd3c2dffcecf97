{{- /*
  Swap for worker kubelets. The kubelet settings go into a drop-in under
  /etc/openshift/kubelet.conf.d because MCO rejects failSwapOn and
  memorySwap in a KubeletConfig CR; only worker kubelets read that folder.

  Nodes that swap also get earlier background reclaim
  (vm.watermark_scale_factor, Documentation/admin-guide/sysctl/vm.rst),
  applied by the swap unit after swapon succeeds (a failed sysctl is
  ignored: it must not keep the kubelet from starting), so nodes without an
  OCPSWAP partition keep kernel defaults. Before OCP 4.21 the kubelet reads
  no drop-in folder and refuses to start with swap on (failSwapOn defaults
  to true), so the unit turns swap on only where MCO's kubelet.service
  passes --config-dir. The file is outside
  /etc/sysctl.d on purpose: systemd-sysctl (and TuneD's reapply_sysctl)
  would apply it on every node of the pool.
*/ -}}
{{- $kubelet := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failSwapOn: false
memorySwap:
  swapBehavior: LimitedSwap
` -}}
{{- $sysctl := `# Applied by kubevirt-swap-on.service once swap is on.
# kswapd wakes when free memory falls to 1% of the node above the min
# watermark and reclaims until 2% (kernel default 0.1% and 0.2%), so a VM's
# page fault finds a free page instead of stalling in direct reclaim, which
# on a swapping node means waiting for swap I/O. Maximum 1000 (3000 on
# newer kernels).
vm.watermark_scale_factor = 100
` -}}
{{- $swapon := `[Unit]
Description=Enable swap on the partition labelled OCPSWAP for KubeVirt workloads
ConditionPathExists=/dev/disk/by-partlabel/OCPSWAP
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
# Swap only where the kubelet reads the drop-in that lets it run with swap
# (--config-dir, OCP 4.21+): an older kubelet keeps failSwapOn true and
# would not start on a node with swap on. A failed condition skips the
# unit without failing it, so the kubelet starts either way.
ExecCondition=/usr/bin/grep -qFe --config-dir=/etc/openshift/kubelet.conf.d /etc/systemd/system/kubelet.service
ExecStart=/usr/sbin/swapon --priority 100 /dev/disk/by-partlabel/OCPSWAP
ExecStartPost=-/usr/sbin/sysctl -p /etc/kubevirt/swap-sysctl.conf

[Install]
RequiredBy=kubelet-dependencies.target
` -}}
{{- $protect := `[Slice]
# Keep system services out of swap so only burstable workloads page.
MemorySwapMax=0
` -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ .Params.role }}-kubevirt-swap
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        - path: /etc/openshift/kubelet.conf.d/90-swap.conf
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $kubelet | b64enc }}
        # Memory tuning for nodes that swap, 0644; read only by the swap unit.
        - path: /etc/kubevirt/swap-sysctl.conf
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $sysctl | b64enc }}
    systemd:
      units:
        - name: kubevirt-swap-on.service
          enabled: true
          contents: {{ $swapon | toJson }}
        - name: system.slice
          dropins:
            - name: 10-kubevirt-swap-protect.conf
              contents: {{ $protect | toJson }}
