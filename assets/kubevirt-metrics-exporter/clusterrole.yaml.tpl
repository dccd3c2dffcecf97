{{- /*
  What the exporter reads from the API, from its source (cmd/exporter/main.go
  startInformers, pkg/qmp/collector.go FetchPVCMap): informers on the pods of
  its node and on all PVCs (list, watch), and one GET of a VMI to map disks to
  PVCs. Nothing else: no nodes, no writes. Narrower than the vendor's own
  ClusterRole, which also grants get on pods and PVCs that no code path uses.
*/ -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
rules:
  # virt-launcher pods on the node (field selector spec.nodeName), to find
  # each VM's QEMU process; PVCs to name the volume behind a block device.
  - apiGroups: [""]
    resources: [pods, persistentvolumeclaims]
    verbs: [list, watch]
  # status.volumeStatus maps a VM disk to its PVC.
  - apiGroups: [kubevirt.io]
    resources: [virtualmachineinstances]
    verbs: [get]
