{{- /*
  What the exporter needs on a node, and nothing more that an SCC can
  express (vendor README "Required capabilities", deploy/openshift/scc.yaml):
  - hostPID: it reaches each VM's virtqemud socket through
    /proc/<pid>/root/run/libvirt/virtqemud-sock (pkg/qmp/collector.go) and
    reads other processes' mountinfo to map block devices to PVCs;
  - hostPath: /sys (tracefs and BTF for eBPF) and the CRI-O socket (to find
    the PID of each virt-launcher container); SCCs cannot restrict paths;
  - capabilities SYS_PTRACE (traverse /proc/<pid>/root), DAC_OVERRIDE (the
    socket is owned by the qemu user), BPF and PERFMON (load programs, attach
    to block and NFS tracepoints), SYS_RESOURCE (eBPF map memory limits);
    every other capability is dropped;
  - root (uid 0), since the capabilities above act for root-owned files.
  SELinux type spc_t (decided here; the vendor's SCC keeps the default
  container_t): container_t is MCS-confined, so connecting to the socket or
  reading /proc of a virt-launcher container with other categories, and
  loading eBPF programs, are expected to be denied (not yet observed on a
  cluster). spc_t adds little to the host access above.
  Not privileged, no host network or IPC, read-only root filesystem. Only
  the exporter's ServiceAccount may use it (Role kubevirt-metrics-exporter-scc).
*/ -}}
apiVersion: security.openshift.io/v1
kind: SecurityContextConstraints
metadata:
  name: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
allowPrivilegedContainer: false
allowPrivilegeEscalation: false
allowHostPID: true
allowHostDirVolumePlugin: true
allowHostIPC: false
allowHostNetwork: false
allowHostPorts: false
readOnlyRootFilesystem: true
allowedCapabilities:
  - BPF
  - DAC_OVERRIDE
  - PERFMON
  - SYS_PTRACE
  - SYS_RESOURCE
defaultAddCapabilities: []
requiredDropCapabilities:
  - ALL
# Granted through RBAC to one ServiceAccount, and pinned by the pods'
# openshift.io/required-scc annotation: the order among SCCs never matters.
priority: 0
runAsUser:
  type: MustRunAs
  uid: 0
seLinuxContext:
  # MustRunAs with only the type set: admission fills in the namespace's
  # MCS level and the pods need no seLinuxOptions of their own.
  type: MustRunAs
  seLinuxOptions:
    type: spc_t
fsGroup:
  type: RunAsAny
supplementalGroups:
  type: RunAsAny
# hostPath for /sys and the CRI-O socket, projected for the API token.
volumes:
  - hostPath
  - projected
