{{- /*
  The exporter's own namespace, as the vendor's deploy/ manifests name it.
  Its DaemonSet needs host access that no openshift-* or HCO namespace
  should grant to everything else running there, so it lives alone. Turning
  the feature off removes the feature's objects one by one and keeps the
  namespace (Retained): deleting it would delete whatever else it holds,
  which the autopilot's role cannot all see.
*/ -}}
apiVersion: v1
kind: Namespace
metadata:
  name: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
    # The platform Prometheus (openshift-monitoring) reads PodMonitors and
    # PrometheusRules only in namespaces with this label.
    openshift.io/cluster-monitoring: "true"
    # hostPID, hostPath and added capabilities are beyond "baseline".
    pod-security.kubernetes.io/enforce: privileged
    pod-security.kubernetes.io/audit: privileged
    pod-security.kubernetes.io/warn: privileged
    # Without this, OpenShift's pod security label syncer rewrites the
    # audit/warn labels above and the two controllers fight over them.
    security.openshift.io/scc.podSecurityLabelSync: "false"
