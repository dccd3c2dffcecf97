{{- /*
  Automatic NUMA balancing migrates memory pages toward the CPUs touching
  them. For VMs with dedicated CPUs and NUMA-aligned memory it only adds
  page faults and latency, so NUMA nodes turn it off.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-{{ .Params.role }}-kubevirt-numa
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  kernelArguments:
    - numa_balancing=disable
