package annotations

import "github.com/kubevirt/virt-platform-autopilot/pkg/schedule"

// Entry describes one annotation or label for the docs (docs-gen writes
// docs/annotations.md's table and README's list from Reference), with the
// vocabulary its parser reports: the docs cannot say other than the code.
type Entry struct {
	Key string
	// On is where it goes: "HCO", "any managed object", or "written by the
	// autopilot".
	On string
	// Summary is one line: what it does.
	Summary string
	// Accepted is its parser's vocabulary ("" for markers the autopilot
	// writes and reads as present or absent).
	Accepted string
	// Anchor is its section in docs/annotations.md.
	Anchor string
	// Check is its parser, for an HCO annotation a template reads (no
	// condition names it): a value it refuses is reported as a notice.
	Check func(key, value string) error
}

func storageClassName(key, value string) error {
	_, err := ParseStorageClassName(key, value)
	return err
}

// Reference lists every annotation and label of the user interface.
var Reference = []Entry{
	{Key: SwitchPrefix + "enable-<feature>", On: "HCO", Anchor: "switches", Accepted: BoolAccepted,
		Summary: "turns an opt-in feature on; off removes what it created; a value not understood changes nothing"},
	{Key: Autopilot, On: "HCO", Anchor: "activation", Accepted: ActivationAccepted,
		Summary: "manage everything (default), nothing (paused), compare only (report-only), or only the listed assets"},
	{Key: DisruptionWindow, On: "HCO", Anchor: "disruption-window", Accepted: schedule.Accepted,
		Summary: "when writes that reboot a pool may go; outside it they are Staged and go together when it opens"},
	{Key: YieldTo, On: "HCO", Anchor: "yield-to", Accepted: YieldToAccepted,
		Summary: "field managers (GitOps, policy) whose fields are a person's: never forced, never drift"},
	{Key: DisabledResources, On: "HCO", Anchor: "disabled-resources", Accepted: DisabledResourcesAccepted,
		Summary: "objects never created or touched (never deleted either)"},
	{Key: "platform.kubevirt.io/sbr-storage-class", On: "HCO", Anchor: "sbr-storage-class", Accepted: StorageClassNameAccepted,
		Summary: "the storage class of the sbr-detection feature's shared volume", Check: storageClassName},
	{Key: LoggingStorageClass, On: "HCO", Anchor: "logging-storage-class", Accepted: StorageClassNameAccepted,
		Summary: "the storage class of a new LokiStack's volumes (logging feature); an existing stack keeps its own", Check: storageClassName},
	{Key: Patch, On: "any managed object", Anchor: "patch", Accepted: PatchAccepted,
		Summary: "a JSON patch applied to what the autopilot renders, before it compares and applies"},
	{Key: IgnoreFields, On: "any managed object", Anchor: "ignore-fields", Accepted: IgnoreFieldsAccepted,
		Summary: "fields whose live value the autopilot keeps, whoever set it"},
	{Key: Mode, On: "any managed object", Anchor: "mode", Accepted: ModeAccepted,
		Summary: "unmanaged: never touched or deleted; report-only: compared and reported, never written"},
	{Key: ManagedByLabel + " (label)", On: "written by the autopilot", Anchor: "markers",
		Summary: "on every object it applies"},
	{Key: Asset, On: "written by the autopilot", Anchor: "markers",
		Summary: "the catalog asset that renders the object"},
	{Key: Shared, On: "written by the autopilot", Anchor: "markers",
		Summary: "an object it only merges a setting into: never deleted"},
	{Key: Adopted, On: "written by the autopilot", Anchor: "markers",
		Summary: "an object that existed before its first apply: never deleted"},
	{Key: Facts, On: "written by the autopilot", Anchor: "markers",
		Summary: "the facts and object a reboot-causing object was written from (the settle period)"},
	{Key: FactRollouts, On: "written by the autopilot", Anchor: "markers", Accepted: FactRolloutsAccepted,
		Summary: "when changed facts rewrote it (at most 2 per 24 h); remove it to let the next go at once"},
}
