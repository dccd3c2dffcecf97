{{- /*
  The log store: the LokiStack OpenShift Logging documents, logging-loki in
  openshift-logging, in the openshift-logging tenancy mode (one tenant per
  log type, access through OpenShift RBAC). The collector and the console
  Logs view point at this name.

  Size from the node count, assuming about 10 GB of logs a day per node
  against each size's rated ingestion (1x.pico 50 GB/day, 1x.extra-small
  100, 1x.small 500, 1x.medium 2 TB): up to 5 nodes (single node and compact
  clusters included) 1x.pico, up to 10 1x.extra-small, up to 50 1x.small,
  more 1x.medium. 1x.demo (no requests, replication 1, "do not use in
  production") is never chosen. The live size is kept when it is larger: a
  node leaving never shrinks the stack (a resize rolls every component),
  and an admin's upsize stays; a downsize needs the patch annotation.

  What the admin provides, and what is therefore kept from the live object:
  - the object storage secret (default name logging-loki-s3, type s3; the
    admin creates it, with bucketnames, endpoint, access_key_id,
    access_key_secret, region). An adopted stack keeps its own secret.
  - the storage class of the PVCs: the live one (the Loki operator never
    changes a StatefulSet's volumeClaimTemplates, so bound volumes are never
    migrated and a change would only lie), else the class the HCO annotation
    platform.kubevirt.io/logging-storage-class names, else the cluster's
    default StorageClass (the newest marked default, as the API server's
    admission picks it). With none of them the stack waits, saying so
    (storageClassName is required).
  - the schema history: schemas may only be appended, never rewritten (the
    operator's webhook rejects it), so an existing list is kept as is.
*/ -}}
{{- $live := .Live | default dict -}}
{{- $nodes := .Topology.Nodes -}}
{{- $size := "1x.pico" -}}
{{- if gt $nodes 50 -}}
{{- $size = "1x.medium" -}}
{{- else if gt $nodes 10 -}}
{{- $size = "1x.small" -}}
{{- else if gt $nodes 5 -}}
{{- $size = "1x.extra-small" -}}
{{- end -}}
{{- $rank := dict "1x.demo" 0 "1x.pico" 1 "1x.extra-small" 2 "1x.small" 3 "1x.medium" 4 -}}
{{- $liveSize := dig "spec" "size" "" $live -}}
{{- if and (hasKey $rank $liveSize) (gt (index $rank $liveSize) (index $rank $size)) -}}
{{- $size = $liveSize -}}
{{- end -}}
{{- $storageClass := dig "spec" "storageClassName" "" $live -}}
{{- $named := storageClassAnnotation "platform.kubevirt.io/logging-storage-class" -}}
{{- if $storageClass -}}
{{- $storageClass = dnsSubdomain "LokiStack spec.storageClassName" $storageClass -}}
{{- else if $named -}}
{{- $storageClass = $named -}}
{{- else -}}
{{- $storageClass = defaultStorageClass -}}
{{- end -}}
{{- if not $storageClass -}}
{{- wait "no default StorageClass for the LokiStack's volumes: mark one default (annotation storageclass.kubernetes.io/is-default-class: \"true\"), or name a class with the HCO annotation platform.kubevirt.io/logging-storage-class" -}}
{{- end -}}
{{- /* The schema history kept entry by entry, each as the CRD admits it
  (loki.grafana.com_lokistacks.yaml ObjectStorageSchema: version one of
  v11, v12, v13; effectiveDate a date): nothing else of the live list is
  copied, so a facts file's author chooses no content here. */ -}}
{{- $schemas := list -}}
{{- range dig "spec" "storage" "schemas" (list (dict "version" "v13" "effectiveDate" "2024-10-01")) $live -}}
{{- if not (kindIs "map" .) }}{{ fail "LokiStack spec.storage.schemas: an entry is not a map" }}{{ end -}}
{{- $version := get . "version" | enumValue "LokiStack spec.storage.schemas[].version" -}}
{{- if not (has $version (list "v11" "v12" "v13")) }}{{ fail (printf "LokiStack spec.storage.schemas[].version %q is not one of v11, v12, v13" $version) }}{{ end -}}
{{- $schemas = append $schemas (dict "version" $version "effectiveDate" (get . "effectiveDate" | date "LokiStack spec.storage.schemas[].effectiveDate")) -}}
{{- end -}}
{{- /* Kept values are checked (and quoted below): they are the live object's. */ -}}
{{- $secretName := dig "spec" "storage" "secret" "name" "logging-loki-s3" $live | dnsSubdomain "LokiStack spec.storage.secret.name" -}}
{{- $secretType := dig "spec" "storage" "secret" "type" "s3" $live | enumValue "LokiStack spec.storage.secret.type" -}}
{{- $days := dig "spec" "limits" "global" "retention" "days" 7 $live | integer "LokiStack spec.limits.global.retention.days" -}}
apiVersion: loki.grafana.com/v1
kind: LokiStack
metadata:
  name: logging-loki
  namespace: openshift-logging
spec:
  size: {{ $size | quote }}
  storage:
    # New stacks start on schema v13 (TSDB index, needed for OTLP and
    # structured metadata), dated in the past as the webhook requires.
    schemas: {{ $schemas | toJson }}
    secret:
      name: {{ $secretName | quote }}
      type: {{ $secretType | quote }}
  storageClassName: {{ $storageClass | quote }}
  limits:
    global:
      retention:
        # A short-term store for troubleshooting (OpenShift Logging supports
        # up to 30 days): without a retention the compactor deletes nothing
        # and the bucket grows forever. An admin's value is kept.
        days: {{ $days }}
  tenants:
    # Tenants application, infrastructure and audit; the gateway authorizes
    # writers and readers with SubjectAccessReviews against OpenShift RBAC.
    mode: openshift-logging
