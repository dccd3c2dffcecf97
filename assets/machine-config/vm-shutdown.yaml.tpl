{{- /*
  Node shutdown waits for VMs (feature vm-drain-shutdown-inhibitor): a
  service holds a systemd-logind "delay" inhibitor lock on shutdown. When
  logind announces one (a reboot by the Machine Config Operator, an admin's
  systemctl reboot or poweroff, the power button), the script evicts the
  node's virt-launcher pods with the node's own credentials, which KubeVirt
  turns into live migrations (virt-api pod-eviction-admitter), then stops
  what is left through CRI-O so virt-handler powers the guests off, and only
  then lets the shutdown go on. Without it, systemd's final kill reaches
  QEMU and guests lose power mid-write.

  Deadlines: 480 s of migration, 240 s of guest shutdown, plus margins; the
  last word is logind's InhibitDelayMaxSec, set here to 900 s (default 5 s).
  A shutdown forced past logind (reboot -f, sysrq, fencing, power loss)
  cannot be delayed by anyone.

  Workers only: masters run the kubelet's own graceful shutdown (MCO
  template, 90 s), which stops every VM pod at the same signal; the catalog
  has no master asset. Keep the kubelet's shutdownGracePeriod unset on
  workers for the same reason.
*/ -}}
{{- $script := `#!/bin/bash
# Keeps a node shutdown from killing running VMs.
#
#   arm       run under systemd-inhibit, which holds a logind "delay" lock on
#             shutdown; when logind announces one (PreparingForShutdown),
#             drain, then exit: the lock goes and the shutdown proceeds.
#   drain     1. evict every virt-launcher pod with the node's own
#                credentials: KubeVirt turns the eviction of a live-migratable
#                VM into a live migration, other VMs are shut down by the
#                pod's graceful deletion (up to MIGRATE_SECONDS);
#             2. stop what is still here through CRI-O: virt-launcher gets
#                SIGTERM and virt-handler powers the guest off (up to
#                STOP_SECONDS, then CRI-O kills it).
#   uncordon  at boot: make the node schedulable again if drain cordoned it.
#
# Every wait has a deadline; logind's InhibitDelayMaxSec is the last one.
set -u

MIGRATE_SECONDS=480
STOP_SECONDS=240
UNCORDON_SECONDS=900
POLL_SECONDS=2
KUBECONFIG=/var/lib/kubelet/kubeconfig
CLIENT_CERT=/var/lib/kubelet/pki/kubelet-client-current.pem
MARK=/var/lib/kubevirt-vm-shutdown/cordoned
SELECTOR=kubevirt.io=virt-launcher

log() { echo "kubevirt-vm-shutdown: $*"; }

# The node's own identity: it may cordon itself and evict or delete pods
# bound to it (NodeRestriction), nothing else.
kube() { timeout 60 oc --kubeconfig="$KUBECONFIG" --request-timeout=30s "$@"; }

preparing_for_shutdown() {
	busctl get-property org.freedesktop.login1 /org/freedesktop/login1 \
		org.freedesktop.login1.Manager PreparingForShutdown 2>/dev/null
}

vm_pods() { crictl pods --label "$SELECTOR" --state ready -q 2>/dev/null; }

node_name() {
	openssl x509 -in "$CLIENT_CERT" -noout -subject 2>/dev/null |
		sed -n 's/.*CN *= *system:node:\([^,/]*\).*/\1/p'
}

arm() {
	# A shutdown already under way when we start means we handled it and
	# were restarted: nothing left to do.
	while :; do
		if [ "$(preparing_for_shutdown)" = "b true" ]; then
			drain
			return 0
		fi
		sleep "$POLL_SECONDS"
	done
}

drain() {
	if [ -z "$(vm_pods)" ]; then
		log "no VMs on this node"
		return 0
	fi
	if systemd-inhibit --list --no-legend 2>/dev/null | grep -q kubelet; then
		log "warning: kubelet graceful node shutdown is on; it stops VM pods at the same time, so VMs may be shut down instead of migrated"
	fi
	migrate
	stop_remaining
}

migrate() {
	local node unschedulable
	node=$(node_name)
	if [ -z "$node" ]; then
		log "node name unknown (no kubelet client certificate): skipping live migration"
		return
	fi
	if ! unschedulable=$(kube get node "$node" -o jsonpath='{.spec.unschedulable}'); then
		log "API server not reachable: skipping live migration"
		return
	fi
	# Remember a cordon that is ours, so boot undoes only that one.
	if [ "$unschedulable" != "true" ]; then
		mkdir -p "$(dirname "$MARK")" && echo "$node" >"$MARK"
	fi
	log "evicting VMs from $node (live migration where possible), up to ${MIGRATE_SECONDS}s"
	if timeout $((MIGRATE_SECONDS + 60)) oc --kubeconfig="$KUBECONFIG" adm drain "$node" \
		--pod-selector="$SELECTOR" --delete-emptydir-data --timeout="${MIGRATE_SECONDS}s"; then
		log "all VMs left $node"
	else
		log "VMs still on $node after ${MIGRATE_SECONDS}s"
	fi
}

stop_remaining() {
	local pod ctr n=0
	for pod in $(vm_pods); do
		for ctr in $(crictl ps --pod "$pod" --name '^compute$' --state running -q 2>/dev/null); do
			timeout $((STOP_SECONDS + 30)) crictl stop --timeout "$STOP_SECONDS" "$ctr" >/dev/null 2>&1 &
			n=$((n + 1))
		done
	done
	if [ "$n" -gt 0 ]; then
		log "shutting down $n remaining VMs, up to ${STOP_SECONDS}s"
		wait
		log "remaining VMs stopped"
	fi
}

uncordon() {
	local node deadline drain
	node=$(cat "$MARK")
	deadline=$(($(date +%s) + UNCORDON_SECONDS))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		# The Machine Config Operator cordons for its own updates and
		# uncordons when done: leave a node it is working on to it.
		if drain=$(kube get node "$node" -o jsonpath='{.metadata.annotations.machineconfiguration\.openshift\.io/desiredDrain}'); then
			case "$drain" in
			drain-*)
				log "the Machine Config Operator is draining $node; leaving the cordon to it"
				rm -f "$MARK"
				return 0
				;;
			esac
			if kube adm uncordon "$node"; then
				rm -f "$MARK"
				return 0
			fi
		fi
		sleep 15
	done
	log "could not uncordon $node in ${UNCORDON_SECONDS}s; run: oc adm uncordon $node"
	return 1
}

case "${1:-}" in
arm) arm ;;
drain) drain ;;
uncordon) uncordon ;;
*)
	echo "usage: $0 arm|drain|uncordon" >&2
	exit 2
	;;
esac
` -}}
{{- $logind := `# Let delay inhibitor locks hold a shutdown up to 15 minutes (default 5 s),
# the deadline of kubevirt-vm-shutdown.service. The kubelet writes its own
# 99-kubelet.conf only when it needs more.
[Login]
InhibitDelayMaxSec=900
` -}}
{{- $service := `[Unit]
Description=Migrate or cleanly shut down VMs before this node shuts down (KubeVirt)
After=dbus.service systemd-logind.service
StartLimitIntervalSec=0

[Service]
ExecStart=/usr/bin/systemd-inhibit --what=shutdown --mode=delay --who=kubevirt-vm-shutdown "--why=Migrating or shutting down VMs" /usr/local/bin/kubevirt-vm-shutdown arm
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
` -}}
{{- $uncordon := `[Unit]
Description=Make this node schedulable again after a shutdown that cordoned it for VMs (KubeVirt)
ConditionPathExists=/var/lib/kubevirt-vm-shutdown/cordoned
Wants=network-online.target
After=network-online.target kubelet.service

[Service]
Type=simple
ExecStart=/usr/local/bin/kubevirt-vm-shutdown uncordon

[Install]
WantedBy=multi-user.target
` -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 95-{{ .Params.role }}-kubevirt-vm-shutdown
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        # The script, 0755 (arm, drain, uncordon).
        - path: /usr/local/bin/kubevirt-vm-shutdown
          mode: 493
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $script | b64enc }}
        # logind caps every delay lock at InhibitDelayMaxSec, 0644.
        - path: /etc/systemd/logind.conf.d/50-kubevirt-vm-shutdown.conf
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $logind | b64enc }}
    systemd:
      units:
        # Holds the lock from boot on; restarted if it dies. During a
        # shutdown logind refuses new delay locks, so a restart cannot
        # hold the shutdown a second time.
        - name: kubevirt-vm-shutdown.service
          enabled: true
          contents: {{ $service | toJson }}
        # Runs only after a shutdown that cordoned the node; not a oneshot,
        # so boot does not wait for the API server.
        - name: kubevirt-vm-shutdown-uncordon.service
          enabled: true
          contents: {{ $uncordon | toJson }}
