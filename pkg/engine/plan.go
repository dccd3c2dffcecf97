package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Step handles one evaluated asset inside Plan. When it returns an object
// for the HCO asset (reconcile order 0), later assets render from it: that
// is the effective HCO (the API server's answer to the apply in the
// controller, a local merge offline). Returning nil keeps the context.
type Step func(d *Decision) (effectiveHCO *unstructured.Unstructured)

// Plan evaluates every asset of cat in reconcile order against rc, calling
// step after each. The controller, the debug endpoints and the render CLI
// all walk the catalog through Plan, so they cannot disagree on order,
// conditions, exclusion, patch, mask or the effective HCO.
func (e *Evaluator) Plan(ctx context.Context, cat *catalog.Catalog, rc *rendercontext.RenderContext, live LiveReader, step Step) []Decision {
	out := make([]Decision, 0, len(cat.Assets))
	act := ActivationOf(rc, cat)
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
			d = Decision{Asset: a, Outcome: Failed, Reason: why, Held: true}
		case ok:
			d = e.Evaluate(ctx, a, rc, live)
		default:
			d = Decision{Asset: a, Outcome: Paused, Reason: why}
			// Only the head naming its object, for reports (which object
			// is paused, what a disabled-resources entry matches).
			d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
		}
		if hco := step(&d); hco != nil && a.ReconcileOrder == 0 && hco.GroupVersionKind() == rendercontext.HCOGVK {
			rc.SetHCO(hco)
		}
		out = append(out, d)
	}
	return out
}

// Preview is the Step of a render without writes: the HCO asset's desired
// state is merged into the current HCO, as an apply would.
func Preview(rc *rendercontext.RenderContext) Step {
	return func(d *Decision) *unstructured.Unstructured {
		if d.Outcome == Included && d.Desired.GroupVersionKind() == rendercontext.HCOGVK {
			return MergeApplied(rc.HCOObject(), d.Desired)
		}
		return nil
	}
}
