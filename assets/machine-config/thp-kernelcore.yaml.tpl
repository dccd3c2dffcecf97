{{- /*
  Memory split into a kernel zone and a movable zone at boot (feature
  thp-kernelcore, a part of thp-tuning with its own switch, since a kernel
  argument always reboots). Unmovable kernel allocations (slab, page
  tables, network buffers) then never land between guest pages, so the
  movable zone can always be compacted into huge pages: THP for VM memory
  keeps working after weeks of uptime instead of fading with fragmentation.

  Sizes: the kernel zone is the larger of 4 GiB and 10% of RAM
  (movablecore=90%; with both arguments the kernel keeps at least kernelcore,
  find_zone_movable_pfns_for_nodes), spread over the NUMA nodes. Larger than
  the least a VM host needs, on purpose: an unmovable allocation that finds
  its zone full fails (an OOM kill with movable memory free), which is far
  worse than a little less room for huge pages.

  Never with device assignment: a VFIO or mediated device pins all guest
  memory, and pinned pages must leave the movable zone
  (check_and_migrate_movable_pages), so a VM with a host device on a node
  whose kernel zone is smaller than its memory would not start. The feature
  therefore holds only while the HCO permits no host or mediated device.
  Not seen by it, and the admin's to rule out before turning it on: SR-IOV
  interfaces bound to vfio-pci (the SR-IOV Network Operator) pin memory
  the same way, and 1 GiB huge pages allocated at runtime never come from
  the movable zone (gigantic pages are not movable), so they must fit in
  the kernel zone.
*/ -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ .Params.role }}-kubevirt-thp-kernelcore
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  kernelArguments:
    - kernelcore=4G
    - movablecore=90%
