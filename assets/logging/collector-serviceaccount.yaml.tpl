{{- /*
  The collector's identity. Since Logging 6 the operator no longer creates
  one: the ClusterLogForwarder names a ServiceAccount the admin provides,
  and the collector pods run as it. collector is the documented name.
*/ -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: collector
  namespace: openshift-logging
