{{- /*
  Static CPU and memory managers for VMs with dedicated CPUs: whole cores
  (full-pcpus-only), NUMA-aligned where possible. CPUs 0-1 and 1124Mi on NUMA
  node 0 stay with the system.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: kubevirt-{{ .Params.pool }}-cpu-manager
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/{{ .Params.pool }}: ""
  kubeletConfig:
    cpuManagerPolicy: static
    cpuManagerPolicyOptions:
      full-pcpus-only: "true"
    cpuManagerReconcilePeriod: 5s
    reservedSystemCPUs: "0-1"
    topologyManagerPolicy: best-effort
    memoryManagerPolicy: Static
    kubeReserved:
      memory: 1Gi
    reservedMemory:
      - numaNode: 0
        limits:
          memory: 1124Mi
