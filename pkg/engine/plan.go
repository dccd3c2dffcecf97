package engine

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Evaluation is one walk of the catalog: a decision per asset, in catalog
// order, and the context the assets after the HCO rendered from (rc with
// the effective HCO).
type Evaluation struct {
	Decisions []Decision
	Context   *rendercontext.RenderContext
}

// Walk is one evaluation of the catalog in reconcile order, in two steps,
// because every asset after the golden config renders from the HCO it
// makes: Begin evaluates the golden config (the assets up to and
// including the HCO asset, reconcile order 0), and Rest the others from
// the effective HCO the caller reports. It writes nothing and calls back
// into nothing: the controller, the debug endpoints and the render CLI
// walk the same way (Preview composes both steps offline), so they cannot
// disagree on order, conditions, exclusion, patch, mask or the effective
// HCO.
type Walk struct {
	e    *Evaluator
	ctx  context.Context
	cat  *catalog.Catalog
	rc   *rendercontext.RenderContext
	live LiveReader
	act  Activation
	// split: the assets before it are the golden config's step.
	split int
	// Golden are the decisions of the first step, in catalog order; the
	// last is the golden config's (the HCO asset), when there is one.
	Golden []Decision
}

// Begin starts a walk of cat against rc and evaluates the golden config.
func (e *Evaluator) Begin(ctx context.Context, cat *catalog.Catalog, rc *rendercontext.RenderContext, live LiveReader) *Walk {
	w := &Walk{e: e, ctx: ctx, cat: cat, rc: rc, live: live, act: ActivationOf(rc, cat)}
	// No golden config: everything renders from the HCO as it is.
	for i := range cat.Assets {
		if e.isHCOAsset(&cat.Assets[i]) {
			w.split = i + 1
			break
		}
	}
	for i := 0; i < w.split; i++ {
		w.Golden = append(w.Golden, w.decide(&cat.Assets[i], rc, ""))
	}
	return w
}

// Rest evaluates every asset after the golden config, from the effective
// HCO: the server's copy after the golden config was applied, else the
// HCO as it is (nil keeps the context's). unconverged says why the HCO is
// not what the golden config makes it (a write throttled, failed or
// refused): the assets that read it then keep their last applied state
// instead of rendering from a copy that is not the effective one.
func (w *Walk) Rest(effective *unstructured.Unstructured, unconverged string) Evaluation {
	rc := w.rc
	if effective != nil {
		rc = rc.WithHCO(effective)
	}
	if unconverged == "" {
		for i := range w.Golden {
			if w.e.isHCOAsset(w.Golden[i].Asset) {
				unconverged = hcoUnconverged(&w.Golden[i])
			}
		}
	}
	out := make([]Decision, 0, len(w.cat.Assets))
	out = append(out, w.Golden...)
	for i := w.split; i < len(w.cat.Assets); i++ {
		out = append(out, w.decide(&w.cat.Assets[i], rc, unconverged))
	}
	pairReplacements(out, rc)
	return Evaluation{Decisions: out, Context: rc}
}

// pairReplacements joins each active asset that replaces another (catalog
// Replaces) with the object the other created and no longer writes (its
// form does not hold on this cluster): that object is deleted with the
// active asset's write, judged by the gate as one write over both objects'
// pools, so the pool rolls once. Both objects are written together or
// neither:
//   - while the other asset cannot be judged (backing off, failed), the
//     replacement's write waits too: the planner names the dependency
//     (Decision.Waits), the gate holds it (gate.Judge's dependency
//     check); one the activation switch leaves out leaves the pair out
//     (Paused);
//   - an object the deletion guard keeps (a person's patch, ignore-fields
//     or mode on it, an exclusion, adoption) holds the replacement as a
//     Conflict: both would apply, and the new form would silently win over
//     what the person kept;
//   - an object already being deleted (MCO's finalizer keeps a
//     KubeletConfig until its generated MachineConfig is gone) is gone.
//
// The activation switch is the walk's to apply (report-only writes and
// deletes nothing through the gate; a paused asset holds its pair), so
// the guard here judges only what protects the object itself.
func pairReplacements(ds []Decision, rc *rendercontext.RenderContext) {
	at := map[string]int{}
	for i := range ds {
		at[ds[i].Asset.Name] = i
	}
	guard := GuardFor(rc).ForTombstones()
	guard.Activation = ""
	for i := range ds {
		y := &ds[i]
		j, ok := at[y.Asset.Replaces]
		if !ok || y.Verdict != VerdictIncluded {
			continue
		}
		x := &ds[j]
		switch x.Verdict {
		case VerdictRetained, VerdictInactive:
		case VerdictPaused:
			// The activation switch leaves the pair out, as it leaves out
			// any asset it does not list (the walk's to apply).
			y.Verdict, y.Desired, y.NodeActions = VerdictPaused, nil, nil
			y.Reason = fmt.Sprintf("it replaces asset %s, which the autopilot's activation leaves out (%s): the two objects are written together or not at all", x.Asset.Name, x.Reason)
			continue
		default:
			// A dependency of its write, which the gate holds (gate.Write
			// Waits): nothing of the pair goes while x cannot be judged.
			y.Waits = fmt.Sprintf("it replaces asset %s, which is %s (%s): the two objects are written together or not at all", x.Asset.Name, x.Verdict, x.Reason)
			continue
		}
		if !CreatedFor(x, x.Live) || !x.Live.GetDeletionTimestamp().IsZero() {
			continue // nothing of the old form, or already going
		}
		old := ObjectKey(x.Live)
		if ok, why := guard.MayDelete(x.Live); !ok {
			y.Verdict, y.Desired, y.NodeActions = VerdictConflict, nil, nil
			y.Reason = fmt.Sprintf("it carries the settings of %s now, but %s is kept (%s); both would apply and this one would silently win over it, so nothing is written until a person decides: "+
				"carry what you tailored on %s over to %s with a %s annotation and delete %s, or keep %s by adding %s to the HCO's %s",
				old, old, why, old, ObjectKey(y.Rendered), annotations.Patch, old, old, ExclusionEntry(y.Rendered), annotations.DisabledResources)
			continue
		}
		y.Replaces = x.Live
		y.Pools = union(y.Pools, rc.PoolsReached(x.Live))
		y.NodeActions = nil // a KubeletConfig's removal reboots
		x.ReplacedBy = y.Asset.Name
		x.Verdict = VerdictInactive
		x.Reason += fmt.Sprintf("; asset %s carries these settings now and deletes %s with its own write", y.Asset.Name, old)
	}
}

// decide evaluates one asset against rc.
func (w *Walk) decide(a *catalog.Asset, rc *rendercontext.RenderContext, unconverged string) Decision {
	e := w.e
	var d Decision
	ok, why := w.act.Allows(a)
	var held bool
	if ok && e.Hold != nil {
		why, held = e.Hold(a)
	}
	switch {
	case held:
		// Its last failure's backoff has not expired: no render, no
		// read, no write until then, whatever triggered this pass.
		d = Decision{Asset: a, Verdict: VerdictFailed, Reason: why, Held: true}
	case ok && unconverged != "" && e.readsHCO(a):
		d = Decision{Asset: a, Verdict: VerdictMissingDependency, AwaitsHCO: true,
			Reason: "waiting for the HyperConverged to converge (" + unconverged + "): it renders from the effective HCO, so its object is kept as last applied"}
		d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
	case ok:
		d = e.Evaluate(w.ctx, a, rc, w.live)
		d.ReportOnly = d.ReportOnly || w.act.ReportOnly
	default:
		d = Decision{Asset: a, Verdict: VerdictPaused, Reason: why}
		// Only the head naming its object, for reports (which object
		// is paused, what a disabled-resources entry matches).
		d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
	}
	if a.Disruption == catalog.DisruptionReboot {
		poolsOf(&d, rc)
	}
	return d
}

// Preview walks the catalog without writing: the golden config's desired
// state is merged into the current HCO, as an apply would; under
// report-only nothing would be applied, so the HCO stays as it is. The
// render CLI and the debug endpoints evaluate this way.
func (e *Evaluator) Preview(ctx context.Context, cat *catalog.Catalog, rc *rendercontext.RenderContext, live LiveReader) Evaluation {
	w := e.Begin(ctx, cat, rc, live)
	var effective *unstructured.Unstructured
	for _, d := range w.Golden {
		if d.Verdict == VerdictIncluded && !d.ReportOnly && d.Desired.GroupVersionKind() == rendercontext.HCOGVK {
			effective = MergeApplied(rc.HCOObject(), d.Desired)
		}
	}
	return w.Rest(effective, "")
}

// ExclusionUnsure says why the root exclusion list may not protect what a
// person meant: an entry that is malformed, or that names a kind no asset
// of cat renders (a plural, a typo; with no catalog, any entry); "" when
// every entry is understood. The gate holds on it (gate.Judge); nothing
// else does.
func ExclusionUnsure(cat *catalog.Catalog, rc *rendercontext.RenderContext) string {
	if len(rc.ExclusionErrors) > 0 {
		return fmt.Sprintf("HCO annotation %s has an entry not understood (%v)", annotations.DisabledResources, rc.ExclusionErrors[0])
	}
	for _, r := range rc.Exclusions.Rules {
		known := false
		for i := range catalogAssets(cat) {
			if strings.EqualFold(cat.Assets[i].Component, r.Kind) {
				known = true
				break
			}
		}
		if !known {
			return fmt.Sprintf("HCO annotation %s entry %q names a kind the autopilot does not render (kinds are singular, like MachineConfig)", annotations.DisabledResources, r.String())
		}
	}
	return ""
}

func catalogAssets(cat *catalog.Catalog) []catalog.Asset {
	if cat == nil {
		return nil
	}
	return cat.Assets
}

// isHCOAsset: the golden config (reconcile order 0, its template writing
// the HCO), known from the asset itself: a decision that was held, or whose
// render failed, has no object to tell by, and still must hold dependents.
func (e *Evaluator) isHCOAsset(a *catalog.Asset) bool {
	if a.ReconcileOrder != 0 {
		return false
	}
	return a.Component == rendercontext.HCOGVK.Kind
}

// hcoUnconverged says why the HCO is not in its desired state because of
// its decision (Invalid, Failed, waiting, Conflict); a write that did not
// land is the caller's to report (Rest's unconverged). Left alone by a
// person (excluded, unmanaged) or by the activation switch, the live HCO
// is the input as it is meant.
func hcoUnconverged(d *Decision) string {
	switch d.Verdict {
	case VerdictInvalid, VerdictFailed, VerdictMissingDependency, VerdictConflict:
		return string(d.Verdict) + ": " + d.Reason
	}
	return ""
}

// readsHCO: the asset's render or conditions read the HCO's spec, which
// the golden config changes.
func (e *Evaluator) readsHCO(a *catalog.Asset) bool {
	for _, c := range a.Conditions {
		if c.Type == catalog.CondFeatureGate || c.Type == catalog.CondHCOFieldUnconfigured {
			return true
		}
	}
	return e.Renderer.ReadsHCO(a.Path)
}
