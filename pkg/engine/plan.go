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

// Step handles one evaluated asset inside Plan, given the context it was
// evaluated with (after the HCO asset, the one with the effective HCO).
type Step func(d *Decision, rc *rendercontext.RenderContext) StepResult

// StepResult is what a Step tells Plan about the asset it handled.
type StepResult struct {
	// HCO, for the HCO asset (reconcile order 0), is the effective HCO
	// later assets render from (the API server's answer to the apply in
	// the controller, a local merge offline). nil keeps the context.
	HCO *unstructured.Unstructured
	// Unconverged, for the HCO asset, says why the HCO is not in its
	// desired state after the step (the write was throttled or failed).
	Unconverged string
}

// Evaluation is one walk of the catalog: a decision per asset, in catalog
// order, and the context the assets after the HCO rendered from (rc with
// the effective HCO the golden config's step returned).
type Evaluation struct {
	Decisions []Decision
	Context   *rendercontext.RenderContext
}

// Plan evaluates every asset of cat in reconcile order against rc, calling
// step after each. The controller, the debug endpoints and the render CLI
// all walk the catalog through Plan, so they cannot disagree on order,
// conditions, exclusion, patch, mask or the effective HCO. rc is not
// changed: the effective HCO is a new context, returned in Context.
func (e *Evaluator) Plan(ctx context.Context, cat *catalog.Catalog, rc *rendercontext.RenderContext, live LiveReader, step Step) Evaluation {
	out := make([]Decision, 0, len(cat.Assets))
	act := ActivationOf(rc, cat)
	// unconverged says why the HCO is not yet what the golden config makes
	// it: assets that read it then keep their last applied state instead
	// of rendering from a copy that is not the effective one.
	var unconverged string
	// An exclusion entry not understood may have meant to protect any
	// object: until it is fixed, nothing that reboots a pool or changes
	// remediation is written or removed.
	unsure := e.exclusionUnsure(cat, rc)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		var d Decision
		ok, why := act.Allows(a)
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
			d = e.Evaluate(ctx, a, rc, live)
			d.ReportOnly = d.ReportOnly || act.ReportOnly
			if unsure != "" && d.Rendered != nil && (d.Verdict == VerdictIncluded || (d.Verdict == VerdictInactive && d.IntentOff)) && Settles(a, d.Rendered.GetKind()) {
				d.Verdict, d.Annotation, d.InvalidReason, d.Desired = VerdictInvalid, annotations.DisabledResources, Malformed, nil
				d.Reason = unsure + ": it may have meant this object, which reboots a pool or changes remediation, so it is left as it is until the entry is fixed"
			}
		default:
			d = Decision{Asset: a, Verdict: VerdictPaused, Reason: why}
			// Only the head naming its object, for reports (which object
			// is paused, what a disabled-resources entry matches).
			d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
		}
		if a.Disruption == catalog.DisruptionReboot {
			poolsOf(&d, rc)
		}
		res := step(&d, rc)
		if e.isHCOAsset(a) {
			if res.HCO != nil {
				rc = rc.WithHCO(res.HCO)
			}
			unconverged = hcoUnconverged(&d, res)
		}
		out = append(out, d)
	}
	return Evaluation{Decisions: out, Context: rc}
}

// Preview is the Step of a render without writes: the HCO asset's desired
// state is merged into the current HCO, as an apply would; under
// report-only nothing would be applied, so the HCO stays as it is.
func Preview(d *Decision, rc *rendercontext.RenderContext) StepResult {
	if d.Verdict == VerdictIncluded && !d.ReportOnly && d.Desired.GroupVersionKind() == rendercontext.HCOGVK {
		return StepResult{HCO: MergeApplied(rc.HCOObject(), d.Desired)}
	}
	return StepResult{}
}

// exclusionUnsure says why the root exclusion list may not protect what a
// person meant: an entry that is malformed, or that names a kind no asset
// renders (a plural, a typo); "" when every entry is understood.
func (e *Evaluator) exclusionUnsure(cat *catalog.Catalog, rc *rendercontext.RenderContext) string {
	if len(rc.ExclusionErrors) > 0 {
		return fmt.Sprintf("HCO annotation %s has an entry not understood (%v)", annotations.DisabledResources, rc.ExclusionErrors[0])
	}
	for _, r := range rc.Exclusions.Rules {
		known := false
		for i := range cat.Assets {
			if k, ok := e.Renderer.StaticKind(cat.Assets[i].Path); !ok || strings.EqualFold(k, r.Kind) {
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

// isHCOAsset: the golden config (reconcile order 0, its template writing
// the HCO), known from the asset itself: a decision that was held, or whose
// render failed, has no object to tell by, and still must hold dependents.
func (e *Evaluator) isHCOAsset(a *catalog.Asset) bool {
	if a.ReconcileOrder != 0 {
		return false
	}
	k, ok := e.Renderer.StaticKind(a.Path)
	return ok && k == rendercontext.HCOGVK.Kind
}

// hcoUnconverged says why the HCO is not in its desired state after its
// step: its decision or its write did not get it there. Left alone by a
// person (excluded, unmanaged) or by the activation switch, the live HCO
// is the input as it is meant.
func hcoUnconverged(d *Decision, res StepResult) string {
	if res.Unconverged != "" {
		return res.Unconverged
	}
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
