{{- /*
  Binds one ClusterRole the Cluster Logging Operator ships to the collector
  ServiceAccount (.Params.clusterRole): collect-<type>-logs lets it read
  that log type (checked by the operator), cluster-logging-write-<type>-logs
  lets it write that LokiStack tenant (checked by the gateway). One binding
  per log type rather than the all-tenants logging-collector-logs-writer,
  so the collector cannot write the audit tenant unless audit logging is
  on. Cluster-wide: the operator checks "collect" with a cluster-scoped
  SubjectAccessReview. roleRef is immutable, so the name follows the role.
*/ -}}
{{- $role := .Params.clusterRole -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubevirt-logging-{{ trimPrefix "cluster-logging-" $role }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $role }}
subjects:
  - kind: ServiceAccount
    name: collector
    namespace: openshift-logging
