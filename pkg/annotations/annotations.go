// Package annotations names the annotations and labels that are the
// autopilot's whole user interface: it adds no API of its own.
package annotations

const (
	// FieldManager is the server-side apply field manager of every write.
	FieldManager = "virt-platform-autopilot"

	// ManagedByLabel is stamped on every object the autopilot applies; the
	// manager's cache only holds objects carrying it.
	ManagedByLabel = "platform.kubevirt.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "virt-platform-autopilot"

	// Asset records which catalog asset an applied object came from, so an
	// opt-in asset's objects can be found again when it turns off.
	Asset = "platform.kubevirt.io/asset"
	// Shared marks an object the autopilot merges into but does not own
	// alone (a config another operator reads): never deleted.
	Shared = "platform.kubevirt.io/shared"
	// Adopted marks an object that existed before the autopilot first
	// applied it (an admin's LokiStack, a Namespace): managed since, but
	// not provably created by the autopilot, so never deleted.
	Adopted = "platform.kubevirt.io/adopted"
	// Facts stamps a reboot-causing object with a hash of the derived
	// facts it was rendered from (pkg/settle): a later write that changed
	// facts ask for is held until they settle.
	Facts = "platform.kubevirt.io/facts"
	// FactRollouts records on a reboot-causing object when changed facts
	// last rewrote it (pkg/gate: a budget per object, so one node's labels
	// cannot roll its pool again and again). A person removes it to let
	// the next fact-driven write go at once.
	FactRollouts = "platform.kubevirt.io/fact-rollouts"

	// Patch on a managed object holds an RFC 6902 JSON patch applied to the
	// rendered object before it is compared and applied.
	Patch = "platform.kubevirt.io/patch"
	// IgnoreFields on a managed object holds comma-separated RFC 6901
	// pointers whose live values the autopilot keeps.
	IgnoreFields = "platform.kubevirt.io/ignore-fields"
	// Mode "unmanaged" on a managed object opts it out entirely.
	Mode = "platform.kubevirt.io/mode"
	// ModeUnmanaged is the opt-out value of Mode.
	ModeUnmanaged = "unmanaged"
	// SwitchPrefix prefixes the HCO annotations that turn features on
	// ("platform.kubevirt.io/enable-loadaware": "true").
	SwitchPrefix = "platform.kubevirt.io/"
	// DisabledResources on the HCO lists objects never to create
	// ("Kind/name" or "Kind/namespace/name", globs allowed, comma separated).
	DisabledResources = "platform.kubevirt.io/disabled-resources"
	// Autopilot on the HCO activates the autopilot: absent or "true" all of
	// it, "false" nothing (paused), or a comma list of assets and groups.
	Autopilot = "platform.kubevirt.io/autopilot"
	// DisruptionWindow on the HCO names when writes that reboot a pool may
	// be sent (pkg/schedule: "Sat,Sun 02:00-06:00 Europe/Berlin"); outside
	// it they are staged. Absent: any time.
	DisruptionWindow = "platform.kubevirt.io/disruption-window"
	// YieldTo on the HCO names the field managers whose fields are a
	// person's (GitOps and policy controllers): a field one of them owns
	// is never forced, never drift, reported as deferred. Absent: the
	// default list (DefaultYieldTo).
	YieldTo = "platform.kubevirt.io/yield-to"
	// ShippedPaused "true" on an object is the mark the autopilot
	// OpenShift Virtualization ships puts on one it stopped writing after
	// an edit war (openshift-virtualization/virt-platform-autopilot
	// pkg/engine/patcher.go setPauseAnnotation), or a person's pause of
	// it. Never written here: an object carrying it is left as it is and
	// reported (Conflict), and never deleted (pkg/shipped).
	ShippedPaused = "platform.kubevirt.io/reconcile-paused"
	// LoggingStorageClass on the HCO names the storage class of a new
	// LokiStack's volumes (the logging feature).
	LoggingStorageClass = "platform.kubevirt.io/logging-storage-class"
)

// Labelled reports whether an object carries the managed-by label, the
// selector of the controller's cache of managed objects.
func Labelled(labels map[string]string) bool {
	return labels[ManagedByLabel] == ManagedByValue
}
