// Package metrics defines the autopilot's Prometheus metrics, registered
// on controller-runtime's registry (served on the manager's metrics endpoint).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const ns = "virt_platform_autopilot"

var (
	// AssetOutcome is 1 for each asset's current outcome.
	AssetOutcome = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "asset_outcome",
		Help: "1 for the last outcome of each asset (Applied, Unchanged, Excluded, Unmanaged, Throttled, Invalid, MissingDependency, NodePool, Inactive, Retained, Failed, Deleted).",
	}, []string{"asset", "outcome"})

	// InvalidAnnotation is 1 while a user annotation is malformed.
	InvalidAnnotation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "invalid_annotation",
		Help: "1 while a user annotation cannot be used; the asset is left untouched until it is fixed.",
	}, []string{"kind", "namespace", "name", "annotation", "reason"})

	// CorrectiveWrites counts server-side applies that created or corrected an object.
	CorrectiveWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "corrective_writes_total",
		Help: "Server-side applies that created or corrected a managed object.",
	}, []string{"kind", "namespace", "name"})

	// DriftDetected counts local drift verdicts; confirmed says whether the
	// server-side dry-run agreed (false: a default or webhook, no write).
	DriftDetected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "drift_detected_total",
		Help: "Drift suspected from the watch cache, by whether a server-side dry-run confirmed it.",
	}, []string{"kind", "namespace", "name", "confirmed"})

	// Compliance is 1 (compliant) or 0 (drifted) for each asset evaluated
	// in report-only.
	Compliance = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "compliance",
		Help: "In report-only (HCO platform.kubevirt.io/autopilot: report-only, or an object's platform.kubevirt.io/mode: report-only): 1 while the asset's object is as the autopilot would apply it, 0 while it has drifted; absent otherwise.",
	}, []string{"asset", "feature"})
	// Deferred is 1 while fields of a managed object are left to a
	// declared owner.
	Deferred = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "deferred_fields",
		Help: "Fields of a managed object left to their owner, by manager: a field manager the HCO declares authoritative (platform.kubevirt.io/yield-to), or KubeletConfig.machineconfiguration.openshift.io/<name> whose settings a kubelet drop-in leaves out; never forced, not drift.",
	}, []string{"kind", "namespace", "name", "manager"})
	// Customization is 1 for each user customization in use: the "tainted" signal.
	Customization = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "customization_info",
		Help: "1 for each managed object a user customizes (type: patch, ignore-fields, unmanaged).",
	}, []string{"asset", "kind", "namespace", "name", "type"})

	// Throttled is 1 while corrective writes to an object are paused.
	Throttled = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "throttled",
		Help: "1 while corrective writes to an object are paused because another actor keeps reverting it; opponent names the competing field manager(s).",
	}, []string{"kind", "namespace", "name", "opponent"})

	// MissingDependency is 1 for an asset that would be active but whose CRD is absent.
	MissingDependency = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "missing_dependency",
		Help: "1 for each asset that would be active but whose CRD is not installed.",
	}, []string{"asset", "kind"})

	// Tombstone reports each tombstone's status.
	Tombstone = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "tombstone_status",
		Help: "1 for each tombstone's current status (Gone, Skipped, Error).",
	}, []string{"kind", "namespace", "name", "status"})

	// Idle is 1 for the reason the autopilot writes and deletes nothing.
	Idle = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "idle",
		Help: "1 while nothing is written or deleted, by reason (hco_crd_absent, hco_version_unserved, hco_absent, hco_terminating, paused, facts_unreadable, beside_shipped_autopilot).",
	}, []string{"reason"})

	// ShippedAutopilot is 1 for the state of the autopilot OpenShift
	// Virtualization ships (pkg/shipped).
	ShippedAutopilot = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "shipped_autopilot",
		Help: "1 for the state of the autopilot OpenShift Virtualization ships in the HCO's namespace (absent, idle, acting, unknown); while acting or unknown this autopilot writes and deletes nothing.",
	}, []string{"state"})

	// AdmissionPolicy is 1 for the state of the admission policy bounding
	// the autopilot's own writes (pkg/admission).
	AdmissionPolicy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "admission_policy",
		Help: "1 for the state of the admission policy that bounds the autopilot's own writes (Enforced, Absent, NotEnforced, Unknown).",
	}, []string{"state"})

	// NodeEvents counts node events by what they did: enqueued (a fact the
	// last reconcile read changed) or ignored (none did).
	NodeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "node_events_total",
		Help: "Node events by outcome: enqueued (a node fact the last reconcile read changed: a reconcile follows, at most one per settle step) or ignored (no fact read changed: no reconcile).",
	}, []string{"outcome"})

	// ReconcileDuration times full reconciles.
	ReconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: ns, Name: "reconcile_duration_seconds",
		Help:    "Duration of a full reconcile of every asset.",
		Buckets: prometheus.ExponentialBuckets(0.001, 3, 10),
	})
)

func init() {
	crmetrics.Registry.MustRegister(Compliance, Deferred, AssetOutcome, InvalidAnnotation, CorrectiveWrites, DriftDetected, Customization, Throttled,
		MissingDependency, Tombstone, Idle, ShippedAutopilot, AdmissionPolicy, NodeEvents, ReconcileDuration)
}
