{{- /*
  Console Logs view (Observe > Logs), reading the logging-loki LokiStack
  through its gateway with the viewing user's token, so each user sees the
  tenants OpenShift RBAC allows. The name is fixed by the CRD for this type.
  The namespace is left out: the plugin looks in openshift-logging by
  default, and older operators lack the field.
*/ -}}
apiVersion: observability.openshift.io/v1alpha1
kind: UIPlugin
metadata:
  name: logging
spec:
  type: Logging
  logging:
    lokiStack:
      name: logging-loki
