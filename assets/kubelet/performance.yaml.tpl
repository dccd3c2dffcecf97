{{- /*
  Kubelet settings for VM density. autoSizingReserved is a top-level spec
  field: inside kubeletConfig MCO would silently ignore it.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: kubevirt-{{ .Params.pool }}-performance
spec:
  # System reserved grows with node size, so large VM hosts keep enough
  # headroom for the kubelet and the runtime.
  autoSizingReserved: true
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/{{ .Params.pool }}: ""
  kubeletConfig:
    # Each VM is a pod plus helpers; dense hosts need more than 250.
    maxPods: 500
    # Report every image, so scheduling sees cached container disks.
    nodeStatusMaxImages: -1
