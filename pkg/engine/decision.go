// Package engine decides, without an API client: Evaluate runs the
// patched-baseline pipeline for one asset up to the write (conditions,
// render, dependencies, exclusion, opt-out, patch, mask, exclusive scopes)
// and returns a Decision with its Verdict; a Walk (Begin, then Rest from
// the effective HCO) evaluates the catalog in reconcile order and returns
// the decisions, writing nothing (the controller writes them through
// pkg/apply, judged by pkg/gate; Preview merges the golden config
// locally); the Guard judges every deletion; Notices lists the HCO inputs
// not acted on.
//
// Evaluate is pure apart from reading live objects through a LiveReader, so
// the controller, the debug endpoints and the render CLI share it and cannot
// disagree about what the autopilot would do.
package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// Verdict is what evaluating one asset decided, before anything is
// written: the controller acts on it, the render CLI and the debug
// endpoints show it.
type Verdict string

// Verdicts of an evaluation.
const (
	// VerdictIncluded: active and ready to sync.
	VerdictIncluded Verdict = "Included"
	// VerdictInactive: an opt-in condition does not hold.
	VerdictInactive Verdict = "Inactive"
	// VerdictRetained: the user's switch is still on but a derived fact
	// (hardware, topology) stopped holding; the object the autopilot
	// created is kept as it is and not written until the fact holds again.
	VerdictRetained Verdict = "Retained"
	// VerdictExcluded by the HCO's disabled-resources annotation.
	VerdictExcluded Verdict = "Excluded"
	// VerdictUnmanaged: the live object opted out with platform.kubevirt.io/mode.
	VerdictUnmanaged Verdict = "Unmanaged"
	// VerdictInvalid: a user annotation is malformed; the object is left as is.
	VerdictInvalid Verdict = "Invalid"
	// VerdictMissingDependency: the kind's CRD (or the gate CRD) is not
	// installed, or the HCO it renders from has not converged.
	VerdictMissingDependency Verdict = "MissingDependency"
	// VerdictNodePool: a hosted control plane's guest (Infrastructure
	// controlPlaneTopology External) serves no MachineConfig or
	// KubeletConfig: node configuration goes into a NodePool's
	// spec.config on the management cluster, where a person (or a policy
	// there) applies it; render --output nodepool writes it. Nothing is
	// written in the guest, and nothing waits.
	VerdictNodePool Verdict = "NodePool"
	// VerdictFailed: rendering or a read failed, or the asset is backing off.
	VerdictFailed Verdict = "Failed"
	// VerdictConflict: another actor's object configures the same thing and
	// the autopilot's would silently override it (a second KubeletConfig on
	// a pool); nothing is written until a person decides.
	VerdictConflict Verdict = "Conflict"
	// VerdictPaused: the HCO's platform.kubevirt.io/autopilot switch leaves
	// this asset out; its object is left exactly as it is, never deleted.
	VerdictPaused Verdict = "Paused"
)

// Outcome is what a reconcile did with one asset, as recorded and
// reported: the result of a write (or of holding one), or a verdict that
// writes nothing reported as it is (Reported).
type Outcome string

// Outcomes recorded per asset.
const (
	// Applied: a write created or corrected the object.
	Applied Outcome = "Applied"
	// Unchanged: already in sync, nothing written.
	Unchanged Outcome = "Unchanged"
	// Throttled: drift persists but the write budget is spent.
	Throttled Outcome = "Throttled"
	// Settling: a derived fact changed and asks for a write that reboots
	// a pool or changes remediation; it waits until the fact has held for
	// the settle period (or the pool MCO reports busy settles).
	Settling Outcome = "Settling"
	// Staged: a write that reboots a pool waits for the HCO's disruption
	// window to open (Staging); it is sent then, with the others staged.
	Staged Outcome = "Staged"
	// Drifted: report-only (the HCO's activation switch, or the object's
	// mode): the object differs from what would be applied, in Drift;
	// nothing is written. Its counterpart, compliant, is Unchanged.
	Drifted Outcome = "Drifted"
	// Deleted: an inactive opt-in asset's object was removed.
	Deleted Outcome = "Deleted"
	// Failed: rendering, a read or a write failed.
	Failed Outcome = "Failed"
	// Refused: the API server refused the write on its merits (the
	// autopilot's role lacks a verb, admission denied it, the object is
	// not valid). Nothing changed: no write budget is spent and nobody is
	// fighting; it is tried again on a growing backoff.
	Refused Outcome = "Refused"

	// Verdicts that write nothing, reported as they are.
	Inactive          = Outcome(VerdictInactive)
	Retained          = Outcome(VerdictRetained)
	Excluded          = Outcome(VerdictExcluded)
	Unmanaged         = Outcome(VerdictUnmanaged)
	Invalid           = Outcome(VerdictInvalid)
	MissingDependency = Outcome(VerdictMissingDependency)
	NodePool          = Outcome(VerdictNodePool)
	Conflict          = Outcome(VerdictConflict)
	Paused            = Outcome(VerdictPaused)
)

// Outcomes lists every recorded outcome (one metric series each).
var Outcomes = []Outcome{Applied, Unchanged, Excluded, Unmanaged, Throttled, Invalid, MissingDependency, NodePool,
	Inactive, Retained, Paused, Conflict, Failed, Refused, Deleted, Settling, Staged, Drifted}

// Reported is the outcome of a verdict that writes nothing: recorded as
// it is, with its reason.
func Reported(d *Decision) Result {
	return Result{Outcome: Outcome(d.Verdict), Reason: d.Reason, Err: d.Err}
}

// Decision is the evaluation of one asset.
type Decision struct {
	Asset   *catalog.Asset
	Verdict Verdict
	Reason  string
	// IntentOff: Inactive because a person's switch is off (an HCO
	// annotation, feature gate or field), not because a derived fact
	// stopped holding. Only then may an opt-in asset's objects go.
	IntentOff bool
	// Rendered is the template output (the baseline), when rendering ran.
	// For an asset that will not be applied (Inactive, waiting) it is only
	// the head that names the object (render.RenderHead: apiVersion, kind,
	// metadata; spec for pool-selecting kinds), enough to find, keep or
	// remove what the asset created.
	Rendered *unstructured.Unstructured
	// Desired is Rendered after the user patch and mask, stamped with the
	// managed-by label: exactly what would be applied. Set when Included.
	Desired *unstructured.Unstructured
	// Structure is how the server merges the kind's maps and lists (from
	// its CRD), for the local drift verdict.
	Structure structure.Structure
	// Live is the object on the cluster, nil when absent or unknown.
	Live *unstructured.Unstructured
	// Customizations lists the user annotations in effect (patch, ignore-fields, unmanaged).
	Customizations []string
	// Annotation names the malformed user annotation when the verdict is
	// Invalid, and InvalidReason says what is wrong with it.
	Annotation    string
	InvalidReason InvalidReason
	// AwaitsHCO: MissingDependency because the HCO has not converged (the
	// asset renders from it); its kind is installed and stays watched.
	AwaitsHCO bool
	// FactPrint hashes the derived facts the object renders from, for an
	// object whose write reboots or changes remediation (pkg/settle).
	FactPrint string
	// ObjectPrint hashes the object rendered from those facts (before a
	// person's patch), set with FactPrint when the asset is active.
	ObjectPrint string
	// Waits, when set, is why this decision's write waits for another
	// (the asset whose object it replaces cannot be judged now): the gate
	// holds it (gate.Write.Waits).
	Waits string
	// IntentPrint hashes what a person chose that the object renders
	// from (IntentPrint), set with FactPrint when the asset is active.
	IntentPrint string
	// Held: the asset's backoff after a failure has not expired, so it was
	// not evaluated (VerdictFailed); its last recorded state stands.
	Held bool
	// Unresolved lists ignore-fields pointers that resolve neither on the
	// live object nor in the desired state: harmless, reported.
	Unresolved []string
	// NodeActions, for a correction of a MachineConfig that MCO applies
	// without draining the pool (the cluster's node disruption policy
	// covers everything it changes), are MCO's actions on each node; nil
	// when the write drains and reboots, or reaches no node.
	NodeActions []nodedisruption.Action
	// ReportOnly: evaluated and compared as if applied, never written or
	// deleted (activation "report-only", or the object's mode).
	ReportOnly bool
	// Deferred are the fields left to a declared owner (HCO annotation
	// platform.kubevirt.io/yield-to), and the kubelet settings left out of
	// a drop-in because an admin's KubeletConfig for the same pool sets
	// them (Owner KubeletConfig). They are never forced nor counted as
	// drift.
	Deferred []Deferral
	// Replaces is the live object of the asset this one replaces
	// (catalog Replaces), deleted together with this asset's write; nil
	// when there is none to delete.
	Replaces *unstructured.Unstructured
	// ReplacedBy names the asset that carries this asset's settings now
	// and deletes its object with its own write.
	ReplacedBy string
	// Pools are the MachineConfigPools a write of a reboot asset's object
	// rolls, read from the pools' selectors (a custom pool taking the
	// worker role's MachineConfigs included), before and after the write;
	// nil when unknown.
	Pools []string
	// MovesPools: the write changes which pools the object reaches (a
	// label or selector change), so it reaches nodes even when only
	// metadata changes.
	MovesPools bool
	// PoolsUnknown: the pools could not be read, so whether the write
	// moves the object between pools cannot be told (it holds).
	PoolsUnknown bool
	// Err is why the decision failed (VerdictFailed), for logs and
	// callers that tell errors apart; Reason is its text.
	Err error
}

// fail makes d a failed decision carrying err; the error names the asset
// and its object where it is known (the status beside it has them already,
// so the reason is err's own text).
func (d *Decision) fail(err error) {
	d.Verdict, d.Reason = VerdictFailed, err.Error()
	switch t := d.Target(); {
	case t != nil && d.Asset != nil:
		err = fmt.Errorf("asset %s, %s: %w", d.Asset.Name, ObjectKey(t), err)
	case d.Asset != nil:
		err = fmt.Errorf("asset %s: %w", d.Asset.Name, err)
	}
	d.Err = err
}

// Deferral is one field left to its declared owners.
type Deferral struct {
	Field    string   `json:"field"`
	Managers []string `json:"managers"`
	// Owner is the kind of owner: "" for the field managers the HCO's
	// yield-to names, OwnerKubeletConfig for admins' KubeletConfigs
	// (Managers then name them by ObjectKey, KubeletConfig.machineconfiguration.openshift.io/<name>).
	Owner string `json:"owner,omitempty"`
}

// OwnerKubeletConfig marks a kubelet setting left out of a drop-in
// because an admin's KubeletConfig for the same pool sets it.
const OwnerKubeletConfig = "KubeletConfig"

func (d Deferral) String() string { return d.Field + " (" + strings.Join(d.Managers, ", ") + ")" }

// WithoutDeferred drops from diff the fields left to their declared
// owners: a share of one the autopilot still holds (which applying would
// release) is not drift. The Syncer and the diff preview both read drift
// through it.
func WithoutDeferred(diff []string, deferred []Deferral) []string {
	if len(deferred) == 0 {
		return diff
	}
	out := diff[:0:0]
	for _, p := range diff {
		if !slices.ContainsFunc(deferred, func(d Deferral) bool { return p == d.Field || strings.HasPrefix(p, d.Field+"/") }) {
			out = append(out, p)
		}
	}
	return out
}

// InvalidReason is a short, bounded code for an unusable annotation (a
// metric label value).
type InvalidReason string

// Why an annotation cannot be used.
const (
	// Malformed: not a JSON patch, a pointer or an entry.
	Malformed InvalidReason = "malformed"
	// ProtectedPath: it touches identity, status or server metadata.
	ProtectedPath InvalidReason = "protected_path"
	// DoesNotApply: valid, but it does not apply to the rendered object.
	DoesNotApply InvalidReason = "does_not_apply"
	// Unsafe: the patched object is one a node would refuse (a kubelet
	// that would not start).
	Unsafe InvalidReason = "unsafe"
	// UnresolvedPointer: an ignore-fields pointer addresses nothing; the
	// asset still converges (a warning, not Invalid).
	UnresolvedPointer InvalidReason = "unresolved_pointer"
	// Escalates: it changes a field the API server judges against the
	// writer's own rights (a role's rules, a binding's subjects), which the
	// autopilot would write with its rights for an author it cannot know.
	Escalates InvalidReason = "escalates"
)

// Target is the object the decision is about, for messages: the live
// object, else the rendered one; nil when rendering failed.
func (d *Decision) Target() *unstructured.Unstructured {
	if d.Live != nil {
		return d.Live
	}
	return d.Rendered
}

// Result is the outcome of syncing one decision.
type Result struct {
	Outcome Outcome
	Reason  string
	// Drift lists the fields that differed (JSON pointers).
	Drift []string
	// Opponents are the other field managers owning drifted fields: who the
	// autopilot is fighting with.
	Opponents []string
	// Updated: an Applied write over a live object that nobody else had
	// changed (every field it changed was still as the autopilot last
	// applied it): what it renders changed (a patch, a switch, the facts),
	// not the object. False for a correction of someone's change.
	Updated bool
	// RetryAfter asks for another pass after this long (a throttled write,
	// a namespace the operator has not created yet).
	RetryAfter time.Duration
	// Impact says what the pool's rollout does to its VMs (pkg/impact),
	// for a write that reboots a pool, sent or waiting to be.
	Impact string
	// ImpactPools is Impact as data, per pool (the console view shows it
	// without names).
	ImpactPools []impact.Pool
	// Object is the server's copy after a write.
	Object *unstructured.Unstructured
	Err    error
	// Annotation names the HCO annotation not understood that held the
	// write (Invalid by the gate); the decision's own when "".
	Annotation string
	// HeldBy names the gate's check that held the write (gate.Order:
	// "window", "pools", "settle", ...); "" when none did.
	HeldBy string
	// Disruption is what the gate judged the write (or deletion) does to
	// nodes, nil when nothing was judged: reports say what was judged,
	// never a second computation of it (Judged).
	Disruption *Disruption
}

// InvalidAnnotation names the annotation not understood behind an Invalid
// outcome: the gate's (an exclusion entry holding a write), else the
// decision's.
func InvalidAnnotation(d *Decision, res Result) string {
	if res.Annotation != "" {
		return res.Annotation
	}
	return d.Annotation
}

// InvalidReasonOf is why InvalidAnnotation was not understood.
func InvalidReasonOf(d *Decision, res Result) InvalidReason {
	if res.Annotation != "" {
		return Malformed
	}
	return d.InvalidReason
}

// Judged is what res's write does to nodes: as the gate judged it, else
// (nothing judged: a report of a decision alone) as d declares it.
func Judged(d *Decision, res Result) Disruption {
	if res.Disruption != nil {
		return *res.Disruption
	}
	return DisruptionOf(d)
}
