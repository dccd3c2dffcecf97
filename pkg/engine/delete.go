package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/exclusion"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Guard holds what, beyond the object itself, can forbid a deletion: the
// HCO's root exclusion list, its activation switch and its lifecycle.
// Every path that deletes (tombstones, an opt-in asset turned off, a
// superseded object, the diff preview) asks the same Guard through the
// gate's deletion intent check (gate.Judge), and apply.Delete sends the
// one DELETE the gate let go, so there is one rule.
type Guard struct {
	Exclusions exclusion.Set
	// HCOTerminating: the HCO is being deleted (uninstall). Nothing is
	// deleted (or written) then: the owners of the operands clean up.
	HCOTerminating bool
	// Activation is the HCO's platform.kubevirt.io/autopilot switch when it
	// is not "everything": paused or partial, the autopilot deletes nothing.
	Activation string
	// Obsolete: the deletion is a tombstone's (a release no longer ships
	// the object), not a person's switch. A person's customization on the
	// object (patch, ignore-fields) then keeps it: an upgrade never
	// silently drops what someone tailored.
	Obsolete bool
}

// ForTombstones is g judging the deletions of obsolete objects.
func (g Guard) ForTombstones() Guard {
	g.Obsolete = true
	return g
}

// GuardFor returns the deletion guard of a render context.
func GuardFor(rc *rendercontext.RenderContext) Guard {
	g := Guard{Exclusions: rc.Exclusions, HCOTerminating: rc.HCOTerminating()}
	if v, ok := rc.HCOAnnotation(annotations.Autopilot); !annotations.ParseActivation(v, ok).All {
		g.Activation = v
	}
	return g
}

// MayDelete reports whether live may be deleted by the autopilot, and if
// not, why. All must hold:
//   - the HCO is not being deleted;
//   - its platform.kubevirt.io/autopilot switch activates everything;
//   - live carries the managed-by label;
//   - the autopilot's field manager has an Apply entry in its
//     managedFields (operators copy labels; managedFields are not copied);
//   - it is not annotated mode: unmanaged or report-only (or a mode not
//     understood);
//   - it is not a shared object (annotated shared: "true");
//   - it was not adopted (annotated adopted: "true": it existed before the
//     autopilot's first apply);
//   - it is not listed in the HCO's disabled-resources;
//   - it is not already being deleted;
//   - for a tombstone (Obsolete), it carries no patch or ignore-fields;
//   - its deletion does not cascade to what it holds (a Namespace).
//
// The gate's deletion intent check asks it on the HCO the deletion is
// judged on; apply.Delete then sends the DELETE with UID and
// resourceVersion preconditions, so an object changed since (a mode or an
// annotation added) is not deleted.
func (g Guard) MayDelete(live *unstructured.Unstructured) (bool, string) {
	if g.HCOTerminating {
		return false, "the HyperConverged is being deleted"
	}
	if g.Activation != "" {
		return false, fmt.Sprintf("HCO annotation %s=%q: nothing is deleted unless everything is active", annotations.Autopilot, g.Activation)
	}
	if !annotations.Labelled(live.GetLabels()) {
		return false, fmt.Sprintf("no %s=%s label", annotations.ManagedByLabel, annotations.ManagedByValue)
	}
	if !managedfields.Applied(live, annotations.FieldManager) {
		return false, fmt.Sprintf("field manager %s never applied it", annotations.FieldManager)
	}
	if strings.TrimSpace(live.GetAnnotations()[annotations.ShippedPaused]) == "true" {
		// The shipped autopilot's edit-war mark, or a person's pause:
		// whatever turned off, never deleted (pkg/shipped).
		return false, fmt.Sprintf("annotated %s=true: left as it is", annotations.ShippedPaused)
	}
	if annotations.LeftAlone(live.GetAnnotations()) {
		// Unmanaged, report-only, or a mode that is not understood (which
		// never lowers a protection).
		return false, fmt.Sprintf("annotated %s=%q", annotations.Mode, live.GetAnnotations()[annotations.Mode])
	}
	if g.Obsolete {
		if c := customizations(live); len(c) > 0 {
			return false, fmt.Sprintf("it carries a person's customization (%s): kept, so the upgrade drops nothing someone tailored; "+
				"carry the customization over to the object that replaces it (the asset now rendering the same settings), then delete this one", strings.Join(c, ", "))
		}
	}
	if why, ok := Cascades(live); ok {
		return false, why
	}
	if annotations.Protects(live.GetAnnotations(), annotations.Shared) {
		return false, "a shared object (the autopilot merged a setting into it): never deleted"
	}
	if annotations.Protects(live.GetAnnotations(), annotations.Adopted) {
		return false, "adopted: it existed before the autopilot first applied it, so it is not provably the autopilot's"
	}
	if r, hit := g.Exclusions.Match(live.GetKind(), live.GetNamespace(), live.GetName()); hit {
		return false, fmt.Sprintf("listed in HCO %s as %q", annotations.DisabledResources, r.String())
	}
	if !live.GetDeletionTimestamp().IsZero() {
		return false, "already being deleted"
	}
	return true, ""
}

// ObjectKey names an object wherever it is shown or remembered (messages,
// Events, errors, a write budget, a verified verdict, a pool wait): its
// kind qualified by its API group ("Kind.group/namespace/name", or
// "Kind.group/name" when cluster-scoped; a core kind has no group), so
// two kinds of one name in different groups are never mistaken for one
// another (names hold no slash, so no two collide).
func ObjectKey(u *unstructured.Unstructured) string {
	k := u.GetKind()
	if g := u.GroupVersionKind().Group; g != "" {
		k += "." + g
	}
	if u.GetNamespace() == "" {
		return k + "/" + u.GetName()
	}
	return k + "/" + u.GetNamespace() + "/" + u.GetName()
}

// ExclusionEntry is the entry of the HCO's disabled-resources that names u
// ("Kind/namespace/name", or "Kind/name": the annotation's own form), for
// messages that tell a person what to add.
func ExclusionEntry(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Identity is ObjectKey: one key per object, shown and remembered alike.
func Identity(u *unstructured.Unstructured) string { return ObjectKey(u) }

// RemovalCandidate returns the object an inactive opt-in asset would have
// created, if the user turned it off (an intent condition, not a derived
// fact, stopped holding) and its kind is served. nil otherwise. Whether the
// live object may go is the Guard's decision.
func RemovalCandidate(d *Decision, rc *rendercontext.RenderContext) *unstructured.Unstructured {
	obj := d.Rendered
	if d.Verdict != VerdictInactive || !d.IntentOff || !d.Asset.OptIn() || d.Asset.Shared || obj == nil || !rc.KindAvailable(obj.GroupVersionKind()) {
		return nil
	}
	return obj
}

// CreatedFor reports whether live is the object the autopilot created for
// asset d: labelled as the autopilot's, its asset annotation naming d's asset.
func CreatedFor(d *Decision, live *unstructured.Unstructured) bool {
	return live != nil && annotations.Labelled(live.GetLabels()) &&
		live.GetAnnotations()[annotations.Asset] == d.Asset.Name
}

// Cascades says why deleting live would take what it holds with it. The
// autopilot's role lists only the kinds it manages, so it cannot see
// whether a container holds anything else (an admin's ConfigMap, a
// Secret): it cannot prove nothing would be lost, so it keeps the
// container. What it put inside goes asset by asset, each through the
// Guard.
func Cascades(live *unstructured.Unstructured) (string, bool) {
	if live == nil || !catalog.ContainerKinds[live.GetKind()] {
		return "", false
	}
	return fmt.Sprintf("deleting %s %s would delete everything in it, and the autopilot cannot see all it holds (its role lists only the kinds it manages): "+
		"kept, with what the autopilot put in it removed one by one; delete it yourself once it holds nothing you need", live.GetKind(), live.GetName()), true
}

// customizations lists the annotations by which a person tailored live.
func customizations(live *unstructured.Unstructured) []string {
	var out []string
	for _, k := range []string{annotations.Patch, annotations.IgnoreFields} {
		if _, ok := live.GetAnnotations()[k]; ok {
			out = append(out, k)
		}
	}
	return out
}
