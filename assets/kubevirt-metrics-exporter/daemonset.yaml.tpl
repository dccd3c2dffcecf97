{{- /*
  One exporter per node that can run VMs. It polls each VM's QEMU (QMP) for
  per-disk latency histograms and virtqueue occupancy, Windows guests' agent
  (QGA) for guest-side latency, and traces block and NFS I/O with eBPF; see
  the vendor README. Settings follow the vendor's deploy/base/daemonset.yaml
  except where a comment says otherwise.

  Placement mirrors the HCO's workload node placement
  (spec.deployment.nodePlacements.workload), which is where virt-handler and
  therefore VMs run; without one, every untainted Linux node, like
  virt-handler. The vendor pins node-role.kubernetes.io/worker instead, which
  misses VM nodes of other roles. kubevirt.io/schedulable is not used: it
  turns "false" when virt-handler is unhealthy, while the VMs keep running
  and their storage is what one wants to see. Control-plane nodes are left
  out unless masters are schedulable (below).
*/ -}}
{{- $image := index .Images "kubevirt-metrics-exporter" -}}
{{- $port := 8080 -}}
{{- $criSocket := "/run/crio/crio.sock" -}}
{{- /* Flags (pkg/config/config.go); the other defaults stand: QMP and QGA poll every 1m, eBPF block and NFS tracing on, NFS kprobes off. */ -}}
{{- $args := list (printf "--listen-address=:%d" $port) "--log-level=info" (printf "--cri-socket=%s" $criSocket) -}}
{{- /* The vendor builds amd64 only (Containerfile GOARCH=amd64; eBPF objects pkg/ebpf/*_x86_bpfel.go). */ -}}
{{- $placement := dig "spec" "deployment" "nodePlacements" "workload" dict .HCO -}}
{{- $nodeSelector := merge (dict "kubernetes.io/os" "linux" "kubernetes.io/arch" "amd64") (dig "nodeSelector" dict $placement | labelMap "HCO spec.deployment.nodePlacements.workload.nodeSelector") -}}
{{- /* Affinity and tolerations are copied whole, through toYaml (which
  quotes every string); the API server checks their contents. */ -}}
{{- $affinity := dig "affinity" dict $placement -}}
{{- if not (or (kindIs "invalid" $affinity) (kindIs "map" $affinity)) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity is not a map" }}{{ end -}}
{{- $tolerations := dig "tolerations" list $placement -}}
{{- if not (or (kindIs "invalid" $tolerations) (kindIs "slice" $tolerations)) }}{{ fail "HCO spec.deployment.nodePlacements.workload.tolerations is not a list" }}{{ end -}}
{{- /* The pod is privileged (hostPID, the SCC): it goes only where VMs can
  run. Unless masters are schedulable (Scheduler mastersSchedulable, or a
  compact cluster), control-plane nodes are excluded whatever the HCO's
  tolerations admit (a blanket "operator: Exists" tolerates their taints
  too): each of the HCO's node selector terms (ORed) gets the exclusion,
  or one term holds it. */ -}}
{{- if not .Topology.SchedulableMasters -}}
{{- $exclude := list (dict "key" "node-role.kubernetes.io/master" "operator" "DoesNotExist") (dict "key" "node-role.kubernetes.io/control-plane" "operator" "DoesNotExist") -}}
{{- $affinity = deepCopy (default dict $affinity) -}}
{{- $na := dig "nodeAffinity" dict $affinity -}}
{{- if not (kindIs "map" $na) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity.nodeAffinity is not a map" }}{{ end -}}
{{- $req := dig "requiredDuringSchedulingIgnoredDuringExecution" dict $na -}}
{{- if not (kindIs "map" $req) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is not a map" }}{{ end -}}
{{- $terms := dig "nodeSelectorTerms" list $req -}}
{{- if not (kindIs "slice" $terms) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity nodeSelectorTerms is not a list" }}{{ end -}}
{{- if not $terms }}{{ $terms = list dict }}{{ end -}}
{{- $limited := list -}}
{{- range $terms -}}
{{- if not (kindIs "map" .) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity nodeSelectorTerm is not a map" }}{{ end -}}
{{- $exprs := dig "matchExpressions" list . -}}
{{- if not (kindIs "slice" $exprs) }}{{ fail "HCO spec.deployment.nodePlacements.workload.affinity matchExpressions is not a list" }}{{ end -}}
{{- $limited = append $limited (merge (dict "matchExpressions" (concat $exprs $exclude)) .) -}}
{{- end -}}
{{- $_ := set $req "nodeSelectorTerms" $limited -}}
{{- $_ = set $na "requiredDuringSchedulingIgnoredDuringExecution" $req -}}
{{- $_ = set $affinity "nodeAffinity" $na -}}
{{- end -}}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kubevirt-metrics-exporter
  namespace: kubevirt-metrics-exporter
  labels:
    app.kubernetes.io/name: kubevirt-metrics-exporter
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: kubevirt-metrics-exporter
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      # A node missing a few scrapes during a rollout is harmless; one node
      # at a time would take hours on a large cluster.
      maxUnavailable: 10%
  template:
    metadata:
      labels:
        # Also the PodMonitor's jobLabel: job="kubevirt-metrics-exporter".
        app.kubernetes.io/name: kubevirt-metrics-exporter
      annotations:
        # Admission must pick this SCC (OpenShift 4.14+), never another one
        # the ServiceAccount might also be allowed.
        openshift.io/required-scc: kubevirt-metrics-exporter
    spec:
      serviceAccountName: kubevirt-metrics-exporter
      # VM processes and their /proc/<pid>/root (see the SCC).
      hostPID: true
      nodeSelector: {{- toYaml $nodeSelector | nindent 8 }}
{{- if $affinity }}
      affinity: {{- toYaml $affinity | nindent 8 }}
{{- end }}
{{- if $tolerations }}
      tolerations: {{- toYaml $tolerations | nindent 8 }}
{{- end }}
      containers:
        - name: exporter
          image: {{ $image | quote }}
          imagePullPolicy: IfNotPresent
          args: {{- toYaml $args | nindent 12 }}
          env:
            # Required: the exporter watches only the pods of its node.
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  # The API server's default, written so the object reads
                  # as rendered (the admission policy compares it).
                  apiVersion: v1
                  fieldPath: spec.nodeName
          ports:
            - name: metrics
              containerPort: {{ $port }}
              protocol: TCP
          # /healthz answers once the HTTP server runs, which main() starts
          # only after its pod and PVC caches sync: give a large cluster up
          # to 5 minutes before liveness applies.
          startupProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 10
            failureThreshold: 30
          livenessProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 30
          readinessProbe:
            httpGet:
              path: /healthz
              port: metrics
            periodSeconds: 10
          resources:
            # The vendor's requests. A memory limit bounds a leak on a node
            # full of VMs; no CPU limit, so scrapes are never throttled.
            requests:
              cpu: 50m
              memory: 64Mi
            limits:
              memory: 256Mi
          securityContext:
            # uid 0 with only the capabilities the SCC allows (see there).
            runAsUser: 0
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop:
                - ALL
              add:
                - BPF
                - DAC_OVERRIDE
                - PERFMON
                - SYS_PTRACE
                - SYS_RESOURCE
          volumeMounts:
            # Finds the PID of each virt-launcher container.
            - name: cri-socket
              mountPath: {{ $criSocket }}
              readOnly: true
            # tracefs and BTF under /sys, with the host's submounts.
            - name: sys
              mountPath: /sys
              readOnly: true
              mountPropagation: HostToContainer
      volumes:
        - name: cri-socket
          hostPath:
            path: {{ $criSocket }}
            type: Socket
        - name: sys
          hostPath:
            path: /sys
            type: Directory
