{{- /*
  Swap for worker kubelets. The kubelet settings go into a drop-in under
  /etc/openshift/kubelet.conf.d because MCO rejects failSwapOn and
  memorySwap in a KubeletConfig CR; only worker kubelets read that folder.
*/ -}}
{{- $kubelet := `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failSwapOn: false
memorySwap:
  swapBehavior: LimitedSwap
` -}}
{{- $swapon := `[Unit]
Description=Enable swap on the partition labelled OCPSWAP for KubeVirt workloads
ConditionPathExists=/dev/disk/by-partlabel/OCPSWAP
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/swapon --priority 100 /dev/disk/by-partlabel/OCPSWAP

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
    systemd:
      units:
        - name: kubevirt-swap-on.service
          enabled: true
          contents: {{ $swapon | toJson }}
        - name: system.slice
          dropins:
            - name: 10-kubevirt-swap-protect.conf
              contents: {{ $protect | toJson }}
