{{- /*
  KSM merging only zero-filled pages (feature ksm-zero-only), for nodes
  where the HCO does not run KSM itself (spec.virtualization.ksmConfiguration
  unset: virt-handler then never writes /sys/kernel/mm/ksm, kubevirt
  pkg/virt-handler/ksm/ksm.go).

  Guests zero the memory they free (Windows zeroes all of it); merging those
  pages into the kernel zero page returns them to the host, and skipping
  every other page keeps ksmd cheap. Upstream Linux can only do the first
  half (use_zero_pages); the second is the RHEL kernel knob
  redhat_only_zero_pages (RHEL 9.9+, not upstream). Without it the script
  leaves KSM off rather than run full content merging nobody asked for.

  Scan rate: the kernel's scan-time advisor where the kernel has it,
  else a fixed rate sized to the node's memory (one pass in 15 minutes,
  capped at 100000 pages a second).
*/ -}}
{{- $script := `#!/bin/bash
# KSM that merges only zero-filled pages (Documentation/admin-guide/mm/ksm.rst).
# Upstream use_zero_pages maps empty pages to the kernel zero page; the
# RHEL kernel knob redhat_only_zero_pages (RHEL 9.9+, not upstream) makes
# ksmd skip every other page. Without that knob KSM is left as it is:
# full content merging costs CPU this feature does not promise.
set -u
KSM=/sys/kernel/mm/ksm
# One pass over the node's memory every 15 minutes.
TARGET_SCAN_SECONDS=900
# Without the advisor: a batch every 100 ms, at most 10000 pages per batch
# (100000 pages a second), at least the kernel default of 100.
SLEEP_MS=100
MIN_BATCH=100
MAX_BATCH=10000
# With the scan-time advisor: ksmd may use at most 20% of a CPU.
ADVISOR_MAX_CPU=20

log() { echo "kubevirt-ksm-zero-only: $*"; }

write() {
	if echo "$2" >"$KSM/$1"; then
		log "$1=$2"
	else
		log "writing $2 to $KSM/$1 failed"
		exit 1
	fi
}

if [ ! -w "$KSM/run" ]; then
	log "this kernel has no KSM; nothing to do"
	exit 0
fi
if [ ! -e "$KSM/redhat_only_zero_pages" ]; then
	log "this kernel cannot restrict KSM to zero pages ($KSM/redhat_only_zero_pages is missing); KSM left as it is"
	exit 0
fi

write use_zero_pages 1
write redhat_only_zero_pages 1
if [ -e "$KSM/advisor_mode" ]; then
	# Kernels with the scan-time advisor adapt pages_to_scan to the memory
	# they find, batch after batch of sleep_millisecs (the kernel default,
	# written so a rerun leaves no earlier value behind).
	write sleep_millisecs 20
	write advisor_mode scan-time
	write advisor_target_scan_time "$TARGET_SCAN_SECONDS"
	write advisor_max_cpu "$ADVISOR_MAX_CPU"
else
	# Older kernels: a fixed rate sized to this node's memory.
	mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
	page_kb=$(($(getconf PAGESIZE) / 1024))
	pages=$((mem_kb / page_kb))
	batch=$((pages * SLEEP_MS / (TARGET_SCAN_SECONDS * 1000)))
	[ "$batch" -lt "$MIN_BATCH" ] && batch=$MIN_BATCH
	[ "$batch" -gt "$MAX_BATCH" ] && batch=$MAX_BATCH
	write sleep_millisecs "$SLEEP_MS"
	write pages_to_scan "$batch"
fi
write run 1
` -}}
{{- $unit := `[Unit]
Description=KSM merging only zero-filled pages (KubeVirt)
ConditionPathExists=/sys/kernel/mm/ksm/run
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/bin/kubevirt-ksm-zero-only

[Install]
WantedBy=kubelet-dependencies.target
` -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ .Params.role }}-kubevirt-ksm
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        # The script, 0755: configures and starts ksmd, or leaves KSM alone.
        - path: /usr/local/bin/kubevirt-ksm-zero-only
          mode: 493
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $script | b64enc }}
    systemd:
      units:
        # Once per boot, before the kubelet starts VMs. Turning the feature
        # off removes this MachineConfig; the reboot that follows leaves KSM
        # at the kernel default (off).
        - name: kubevirt-ksm-zero-only.service
          enabled: true
          contents: {{ $unit | toJson }}
