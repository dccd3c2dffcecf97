{{- /*
  A pool's kubelet settings, composed from every active kubelet feature, in
  one of two forms (.Params.form):

  - kubeletconfig (default): the pool's one KubeletConfig. One, because MCO
    renders each KubeletConfig into its own MachineConfig holding a whole
    /etc/kubernetes/kubelet.conf, merged in name order: the newest
    KubeletConfig of a pool replaces the file of the others instead of
    merging with it (machine-config-operator pkg/controller/kubelet-config,
    getManagedKubeletConfigKey and generateKubeletIgnFiles; docs/assets.md).
    Where an admin's KubeletConfig holds the pool, this form is a Conflict.
  - dropin: where the pool's kubelet reads /etc/openshift/kubelet.conf.d
    (the kubelet-config-dir condition), a MachineConfig with the same
    settings as a drop-in the kubelet merges over kubelet.conf, beside an
    admin's KubeletConfig. The autopilot leaves out of it every setting
    such a KubeletConfig sets (pkg/kubeletdropin), so the admin's value
    stays in effect. 30-kubevirt.conf sorts after MCO's 20-auto-sizing.conf
    and before the drop-ins admins usually name (50-, 99-), which win over
    it. The system reservation MCO would move out of a KubeletConfig goes
    where MCO puts it, /etc/node-sizing-enabled.env (sorted after MCO's
    template, 00-<role>, and before an admin KubeletConfig's generated
    99-<pool>-generated-kubelet, which wins).

  Settings:
    - always: maxPods 500 (each VM is a pod plus helpers; dense hosts need
      more than 250) and nodeStatusMaxImages -1 (every image reported, so
      scheduling sees cached container disks); system reserved grows with
      node size, computed at boot (autoSizingReserved), so large VM hosts
      keep enough headroom for the kubelet and the runtime.
    - HCO feature gate CPUManager: VMs with dedicated CPUs get whole cores
      (static policy, full-pcpus-only), NUMA-aligned where possible
      (topology best-effort); CPUs 0-1 stay with the system. The Static
      memory manager requires reservedMemory, summed over NUMA nodes, to
      equal kubeReserved + systemReserved + evictionHard memory.available,
      or the kubelet does not start: so systemReserved is fixed (1Gi, not
      auto-sized, which MCO also refuses beside an explicit value) and the
      whole reservation sits on NUMA node 0, which every node has
      (pkg/reservation). A set evictionHard replaces the kubelet's default
      thresholds whole, so every default signal is named at its default.
      Changing the CPU policy is safe on a node that ran another one: the
      change reboots the node, and MCO's kubelet-cleanup.service removes
      cpu_manager_state and memory_manager_state before the kubelet starts.
      In the drop-in form the kubelet also gets what MCO does for a
      KubeletConfig beside reservedSystemCPUs (generateKubeletIgnFiles): no
      systemReservedCgroup and only pods enforcement, since the kubelet
      refuses reservedSystemCPUs beside a reserved cgroup.
*/ -}}
{{- $cpu := featureGate "CPUManager" -}}
{{- $pool := .Params.pool -}}
{{- $dropin := eq (index .Params "form") "dropin" -}}
{{- $kc := dict "maxPods" 500 "nodeStatusMaxImages" -1 -}}
{{- $r := memoryReservation -}}
{{- if $cpu -}}
{{- $eviction := dict "memory.available" $r.evictionHard -}}
{{- range $signal, $threshold := $r.evictionDefaults }}{{ $_ := set $eviction $signal $threshold }}{{ end -}}
{{- $_ := set $kc "cpuManagerPolicy" "static" -}}
{{- $_ = set $kc "cpuManagerPolicyOptions" (dict "full-pcpus-only" "true") -}}
{{- $_ = set $kc "cpuManagerReconcilePeriod" "5s" -}}
{{- $_ = set $kc "reservedSystemCPUs" "0-1" -}}
{{- $_ = set $kc "topologyManagerPolicy" "best-effort" -}}
{{- $_ = set $kc "memoryManagerPolicy" "Static" -}}
{{- $_ = set $kc "kubeReserved" (dict "memory" $r.kubeReserved) -}}
{{- $_ = set $kc "evictionHard" $eviction -}}
{{- $_ = set $kc "reservedMemory" (list (dict "numaNode" 0 "limits" (dict "memory" $r.numaNode0))) -}}
{{- end -}}
{{- if not $dropin }}
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: kubevirt-kubelet-{{ $pool }}
spec:
{{- if not $cpu }}
  autoSizingReserved: true
{{- end }}
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/{{ $pool }}: ""
  kubeletConfig:
{{- if $cpu }}{{ $_ := set $kc "systemReserved" (dict "memory" $r.systemReserved) }}{{ end }}
    {{- toYaml $kc | nindent 4 }}
{{- else }}
{{- if $cpu -}}
{{- $_ := set $kc "systemReservedCgroup" "" -}}
{{- $_ = set $kc "enforceNodeAllocatable" (list "pods") -}}
{{- end -}}
{{- $conf := print "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" (toYaml $kc) "\n" -}}
{{- /* As MCO writes it for a KubeletConfig (createNewKubeletDynamicSystemReservedIgnition):
  auto-sizing on with its defaults, or off with the fixed reservation. */ -}}
{{- $sizing := printf "NODE_SIZING_ENABLED=%t\nSYSTEM_RESERVED_MEMORY=%s\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n" (not $cpu) $r.systemReserved }}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ $pool }}-kubevirt-kubelet
  labels:
    machineconfiguration.openshift.io/role: {{ $pool }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        - path: /etc/openshift/kubelet.conf.d/30-kubevirt.conf
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $conf | b64enc }}
        - path: /etc/node-sizing-enabled.env
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $sizing | b64enc }}
{{- end }}
