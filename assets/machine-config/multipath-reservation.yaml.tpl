{{- /*
  SCSI persistent reservations on multipath devices (feature
  scsi-persistent-reservations). A VM that shares a LUN-backed disk with
  others (a Windows failover cluster, a shared-disk database) registers a
  reservation key through KubeVirt's pr-helper, which on a multipath device
  goes through libmpathpersist. With reservation_key "file", multipathd keeps
  the registered key in its prkeys file and registers it on every path that
  appears later (a path coming back after a fabric flap, a new path after a
  rescan); without it a path that returns carries no registration and the
  guest's I/O on it fails with a reservation conflict.

  A drop-in in multipath's config_dir (RHEL's /etc/multipath/conf.d), so an
  admin's /etc/multipath.conf (written by another MachineConfig, or by
  mpathconf at install) is neither replaced nor merged into: multipathd
  reads both, and a defaults keyword here is the only one it sets. On nodes
  where multipathd does not run, the file is read by nobody.
*/ -}}
{{- $conf := `# KubeVirt: keep SCSI persistent reservation keys in multipathd's prkeys
# file, so keys registered through mpathpersist (KubeVirt's pr-helper) are
# registered again on paths that appear later.
defaults {
	reservation_key file
}
` -}}
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 90-{{ .Params.role }}-kubevirt-multipath-reservation
  labels:
    machineconfiguration.openshift.io/role: {{ .Params.role }}
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
        - path: /etc/multipath/conf.d/kubevirt-reservation.conf
          mode: 420
          overwrite: true
          contents:
            source: data:text/plain;charset=utf-8;base64,{{ $conf | b64enc }}
