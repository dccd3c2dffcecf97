{{- /*
  Transparent huge pages for VM hosts (feature thp-tuning): huge pages only
  in regions a process madvises, which QEMU does for guest RAM, so VMs keep
  them while other processes are not inflated to 2 MiB per touched region;
  and a khugepaged that collapses split memory back ten times faster.

  Set through sysfs by a oneshot unit at boot, not with the kernel argument
  transparent_hugepage=madvise: TuneD ignores every profile's THP setting
  when that argument is on the command line (tuned plugin_vm.py), so a
  PerformanceProfile asking for "never" would silently lose. Through sysfs,
  the TuneD of the Node Tuning Operator, which starts later, still wins on
  the nodes it tunes. khugepaged has no boot parameters anyway.

  With zero-page KSM on (feature ksm-zero-only, same condition as its
  assets), khugepaged collapses only fully populated ranges: it counts KSM's
  zero pages as empty and would replace them with private memory.
*/ -}}
{{- $ksmZeroOnly := and (switch "enable-ksm-zero-only") (empty (dig "spec" "virtualization" "ksmConfiguration" dict .HCO)) -}}
{{- $script := `#!/bin/bash
# Transparent huge pages for VM hosts (Documentation/admin-guide/mm/transhuge.rst):
# huge pages only where a process asks with madvise(MADV_HUGEPAGE), which QEMU
# does for guest RAM, and a faster khugepaged. A knob this kernel lacks is
# reported and skipped; a failed write fails the unit (kubelet still starts).
set -u
THP=/sys/kernel/mm/transparent_hugepage
status=0

set_knob() {
	if [ ! -e "$THP/$1" ]; then
		echo "kubevirt-thp-tuning: $THP/$1 not present, skipped"
		return
	fi
	if echo "$2" >"$THP/$1"; then
		echo "kubevirt-thp-tuning: $1=$2"
	else
		echo "kubevirt-thp-tuning: writing $2 to $THP/$1 failed"
		status=1
	fi
}

# Huge pages for madvised regions only: VM memory keeps them, other
# processes are not inflated to 2 MiB per touched region.
set_knob enabled madvise
# Page faults in madvised regions may reclaim and compact to get a huge
# page at once (the kernel default, pinned); nothing else stalls for one.
set_knob defrag madvise
# khugepaged compacts memory when it collapses (kernel default, pinned).
set_knob khugepaged/defrag 1
# One scan pass per second instead of every 10 s, so memory split by
# migration, swap or KSM is collapsed back in hours, not days.
set_knob khugepaged/scan_sleep_millisecs 1000
# Never swap pages in just to build a huge page; the guest brings them
# back when it touches them.
set_knob khugepaged/max_ptes_swap 0
# With zero-page KSM, a collapse would turn KSM's shared zero pages back
# into private memory: collapse only fully populated ranges then.
if [ -n "${KUBEVIRT_THP_MAX_PTES_NONE:-}" ]; then
	set_knob khugepaged/max_ptes_none "$KUBEVIRT_THP_MAX_PTES_NONE"
fi
exit "$status"
` -}}
{{- $env := "" -}}
{{- if $ksmZeroOnly }}{{ $env = "Environment=KUBEVIRT_THP_MAX_PTES_NONE=0\n" }}{{ end -}}
{{- $unit := print `[Unit]
Description=Transparent huge pages for VMs: madvise mode, faster khugepaged
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
` $env `ExecStart=/usr/local/bin/kubevirt-thp-tuning

[Install]
WantedBy=kubelet-dependencies.target
` -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ .Params.role }}-kubevirt-thp
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        # The script, 0755: writes each setting, skips what the kernel lacks.
        - path: /usr/local/bin/kubevirt-thp-tuning
          mode: 493
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $script | b64enc }}
    systemd:
      units:
        # Before the kubelet, so every VM starts under these settings; wanted,
        # not required: a failed write must not keep the node from working.
        - name: kubevirt-thp-tuning.service
          enabled: true
          contents: {{ $unit | toJson }}
