{{- /*
  The one KubeletConfig of a pool, composed from every active kubelet feature.

  One, because MCO renders each KubeletConfig into its own MachineConfig
  holding a whole /etc/kubernetes/kubelet.conf, merged in name order: the
  newest KubeletConfig of a pool replaces the file of the others instead of
  merging with it (machine-config-operator pkg/controller/kubelet-config,
  getManagedKubeletConfigKey and generateKubeletIgnFiles; docs/assets.md).

  Parts:
    - always: density settings (maxPods, nodeStatusMaxImages);
    - HCO feature gate CPUManager: static CPU and memory managers, with a
      fixed system reservation whose sum the kubelet checks (pkg/reservation).
*/ -}}
{{- $cpu := featureGate "CPUManager" }}
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: kubevirt-kubelet-{{ .Params.pool }}
spec:
{{- if not $cpu }}
  # System reserved grows with node size (computed at boot), so large VM
  # hosts keep enough headroom for the kubelet and the runtime. A top-level
  # spec field: inside kubeletConfig MCO would ignore it.
  autoSizingReserved: true
{{- end }}
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/{{ .Params.pool }}: ""
  kubeletConfig:
    # Each VM is a pod plus helpers; dense hosts need more than 250.
    maxPods: 500
    # Report every image, so scheduling sees cached container disks.
    nodeStatusMaxImages: -1
{{- if $cpu }}
{{- $r := memoryReservation }}
    # VMs with dedicated CPUs get whole cores (full-pcpus-only), NUMA-aligned
    # where possible; CPUs 0-1 stay with the system. Changing the policy is
    # safe on a node that ran another one: the change reboots the node, and
    # MCO's kubelet-cleanup.service removes cpu_manager_state and
    # memory_manager_state before the kubelet starts (docs/assets.md).
    cpuManagerPolicy: static
    cpuManagerPolicyOptions:
      full-pcpus-only: "true"
    cpuManagerReconcilePeriod: 5s
    reservedSystemCPUs: "0-1"
    topologyManagerPolicy: best-effort
    memoryManagerPolicy: Static
    # The memory manager requires reservedMemory, summed over NUMA nodes, to
    # equal kubeReserved + systemReserved + evictionHard memory.available,
    # or the kubelet does not start. So systemReserved is fixed here (not
    # auto-sized, which MCO also refuses beside an explicit value) and the
    # whole reservation sits on NUMA node 0, which every node has.
    kubeReserved:
      memory: {{ $r.kubeReserved }}
    systemReserved:
      memory: {{ $r.systemReserved }}
    # A set evictionHard replaces the kubelet's default thresholds whole
    # (it fills in defaults only when the map is absent, and MCO's
    # kubelet.conf has none to merge onto), so every default signal is
    # named, at its default: a signal left out is never evicted on.
    evictionHard:
      memory.available: {{ $r.evictionHard }}
{{- range $signal, $threshold := $r.evictionDefaults }}
      {{ $signal }}: {{ $threshold | quote }}
{{- end }}
    reservedMemory:
      - numaNode: 0
        limits:
          memory: {{ $r.numaNode0 }}
{{- end }}
