{{- /*
  The exporter's own namespace, as the vendor's deploy/ manifests name it.
  Its DaemonSet needs host access that no openshift-* or HCO namespace
  should grant to everything else running there, so it lives alone; turning
  the feature off deletes the namespace and with it every namespaced object
  of the feature.
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
