{{- /*
  The collector: OpenShift Logging's documented ClusterLogForwarder,
  collector in openshift-logging, running as the collector ServiceAccount
  (bound to the collect and write ClusterRoles by the logging bindings)
  and sending application and infrastructure logs to the logging-loki
  LokiStack. Audit logs are added when the audit-logging switch is on too;
  its bindings are assets of that feature. The documented names mean a
  cluster set up by hand converges on one collector instead of running two
  that store every line twice.

  dataModel is left to the operator's default (ViaQ today): the console Logs
  view follows the same default, and the field only exists from Logging 6.1.
*/ -}}
{{- $inputs := list "application" "infrastructure" -}}
{{- if switch "enable-audit-logging" -}}
{{- $inputs = append $inputs "audit" -}}
{{- end -}}
apiVersion: observability.openshift.io/v1
kind: ClusterLogForwarder
metadata:
  name: collector
  namespace: openshift-logging
spec:
  serviceAccount:
    # Created by the logging-collector-sa asset; the operator checks with
    # SubjectAccessReviews that it may collect every input below.
    name: collector
  outputs:
    - name: default-lokistack
      type: lokiStack
      lokiStack:
        target:
          name: logging-loki
          namespace: openshift-logging
        authentication:
          # The gateway authorizes the service account's token per tenant.
          token:
            from: serviceAccount
      tls:
        # The gateway serves a service-CA certificate; OpenShift publishes
        # that CA in every namespace as this ConfigMap.
        ca:
          key: service-ca.crt
          configMapName: openshift-service-ca.crt
  pipelines:
    - name: default-logstore
      inputRefs: {{ $inputs | toJson }}
      outputRefs:
        - default-lokistack
