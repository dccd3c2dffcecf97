package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/overrides"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/reservation"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// Evaluate runs, for one asset, the steps of the patched-baseline
// pipeline up to the write, in order (evaluateSteps): dependencies,
// conditions, render, scope (kinds served, gate CRD, root exclusion,
// hosted guests), the live object, its customizations (opt-out, patch,
// mask), yield-to, exclusive scopes and the node's checks, the settle
// stamp. The first step that decides ends it; a decision no step decided
// is Included. live may be nil (offline).
func (e *Evaluator) Evaluate(ctx context.Context, a *catalog.Asset, rc *rendercontext.RenderContext, live LiveReader) Decision {
	s := &evaluation{e: e, ctx: ctx, rc: rc, live: live, d: Decision{Asset: a}}
	for _, step := range evaluateSteps {
		if step(s) {
			return s.d
		}
	}
	s.d.Desired = s.desired
	s.d.Verdict = VerdictIncluded
	s.d.NodeActions = nodeActions(&s.d, rc)
	return s.d
}

// evaluation is one asset's pass through the pipeline: the decision being
// made and what the steps hand on to each other.
type evaluation struct {
	e    *Evaluator
	ctx  context.Context
	rc   *rendercontext.RenderContext
	live LiveReader
	d    Decision
	// obj is the render (the baseline); desired it patched and masked;
	// judged desired with the owners' values where they are kept.
	obj, desired, judged *unstructured.Unstructured
	// kubeletLeft are the settings a drop-in leaves to an admin's
	// KubeletConfig.
	kubeletLeft []Deferral
}

// evaluateSteps are Evaluate's steps in order; each returns true when it
// decided.
var evaluateSteps = []func(*evaluation) bool{
	(*evaluation).dependencies,
	(*evaluation).conditions,
	(*evaluation).render,
	(*evaluation).scope,
	(*evaluation).readLive,
	(*evaluation).customizations,
	(*evaluation).yield,
	(*evaluation).checks,
	(*evaluation).settleStamp,
}

// dependencies: a catalog condition the cluster does not offer yet (an
// operand image, a kind) leaves the asset waiting.
func (s *evaluation) dependencies() bool {
	d, a, rc := &s.d, s.d.Asset, s.rc
	c, waiting := Waiting(a, rc)
	if !waiting {
		return false
	}
	d.Verdict = VerdictMissingDependency
	d.Reason = "waiting: " + c.String()
	if c.Type == catalog.CondImage {
		d.Reason = fmt.Sprintf("waiting for the operand image %s: set %s on the autopilot's Deployment (OLM sets it from the bundle)", c.Name, catalog.ImageEnv(c.Name))
	}
	d.Rendered, _ = s.e.Renderer.RenderHead(a.Path, rc, a.Params)
	return true
}

// conditions: the asset's switches and facts; off, it is Inactive (and
// what it created is found, to keep or remove); a switch not understood
// leaves it as it is.
func (s *evaluation) conditions() bool {
	e, d, a, rc := s.e, &s.d, s.d.Asset, s.rc
	ok, why, intentOff, err := ConditionsHold(a, rc)
	if _, invalid := annotations.AsInvalid(err); err != nil && !invalid {
		// A fact that cannot be known is never read as false.
		d.fail(err)
		return true
	}
	if err != nil {
		// A switch that is not understood: the asset is left exactly as
		// it is (never written, never removed) until it is fixed.
		e.invalidInput(s.ctx, d, rc, s.live, err)
		return true
	}
	if ok {
		return false
	}
	d.Verdict, d.Reason, d.IntentOff = VerdictInactive, why, intentOff
	// Still render (best effort) so the caller knows which object the
	// asset owns, to remove or retain it.
	d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
	if d.Rendered != nil && Settles(a, d.Rendered.GetKind()) {
		// The facts while it is off: a fact turning it on is a change.
		d.FactPrint, _ = FactPrint(a, rc, e.Renderer.ReadsOf(a.Path))
	}
	e.inactive(s.ctx, d, rc, s.live)
	return true
}

// render renders the object; a template that waits for something the
// cluster does not offer yet leaves the asset waiting.
func (s *evaluation) render() bool {
	e, d, a, rc, live := s.e, &s.d, s.d.Asset, s.rc, s.live
	obj, err := e.Renderer.Render(a.Path, rc, a.Params, nil)
	if _, waits := render.AsWait(err); waits && live != nil && e.Renderer.UsesLive(a.Path) {
		// A template that keeps live state may not need what it waits for
		// once it sees the object as it is (an existing LokiStack's class).
		if head, _ := e.Renderer.RenderHead(a.Path, rc, a.Params); head != nil && rc.KindAvailable(head.GroupVersionKind()) {
			l, lerr := live.Live(s.ctx, head.GroupVersionKind(), head.GetNamespace(), head.GetName())
			if lerr != nil {
				d.fail(fmt.Errorf("read live object: %w", lerr))
				return true
			}
			if l != nil {
				obj, err = e.Renderer.Render(a.Path, rc, a.Params, l)
			}
		}
	}
	if w, waits := render.AsWait(err); waits {
		// The cluster does not offer what the object needs yet.
		d.Verdict, d.Reason = VerdictMissingDependency, w.Error()
		d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
		return true
	}
	if err != nil {
		if _, ok := annotations.AsInvalid(err); ok {
			// The template read an HCO annotation that is not understood.
			e.invalidInput(s.ctx, d, rc, live, err)
			return true
		}
		d.fail(err)
		return true
	}
	d.Rendered, s.obj = obj, obj
	return false
}

// scope: the kind is served (or the guest is hosted), the gate CRD is
// installed, the object is not root-excluded.
func (s *evaluation) scope() bool {
	d, a, rc, obj := &s.d, s.d.Asset, s.rc, s.obj
	gvk := obj.GroupVersionKind()
	// A hosted control plane's guest serves no node configuration kind:
	// its objects go to a NodePool, once every other rule (the gate CRD,
	// the admin's exclusions) has been applied to them as anywhere else.
	hosted := false
	if !rc.KindAvailable(gvk) {
		if !rc.Topology.ExternalControlPlane || !catalog.RebootKinds[gvk.Kind] {
			d.Verdict, d.Reason = VerdictMissingDependency, fmt.Sprintf("%s is not served by the cluster (CRD not installed)", gvkString(gvk))
			return true
		}
		hosted = true
	}
	if a.GateCRD != "" && !rc.CRDInstalled(a.GateCRD) {
		d.Verdict, d.Reason = VerdictMissingDependency, fmt.Sprintf("CRD %s is not installed", a.GateCRD)
		return true
	}
	if r, hit := rc.Exclusions.Match(obj.GetKind(), obj.GetNamespace(), obj.GetName()); hit {
		d.Verdict, d.Reason = VerdictExcluded, fmt.Sprintf("listed in HCO %s as %q", annotations.DisabledResources, r.String())
		return true
	}
	if hosted {
		d.Verdict, d.Reason = VerdictNodePool, fmt.Sprintf("a hosted control plane: the guest serves no %s; node configuration goes into a NodePool's spec.config on the management cluster ('render --output nodepool' writes it; each change rolls the NodePool)", gvk.Kind)
		return true
	}
	return false
}

// readLive reads the live object; a template that keeps some of its state
// renders again, seeing it. A drop-in leaves to an admin's KubeletConfig
// the settings it holds.
func (s *evaluation) readLive() bool {
	e, d, a, rc := s.e, &s.d, s.d.Asset, s.rc
	gvk := s.obj.GroupVersionKind()
	if s.live != nil {
		var err error
		if d.Live, err = s.live.Live(s.ctx, gvk, s.obj.GetNamespace(), s.obj.GetName()); err != nil {
			d.fail(fmt.Errorf("read live object: %w", err))
			return true
		}
	}
	if d.Live != nil && e.Renderer.UsesLive(a.Path) {
		// Templates that keep some of the live state (for example the
		// descheduler's preserved profiles) render again, seeing it.
		obj, err := e.Renderer.Render(a.Path, rc, a.Params, d.Live)
		if err != nil {
			if w, waits := render.AsWait(err); waits {
				d.Verdict, d.Reason = VerdictMissingDependency, w.Error()
				return true
			}
			d.fail(err)
			return true
		}
		d.Rendered, s.obj = obj, obj
	}
	var err error
	if s.kubeletLeft, err = leaveToKubeletConfigs(a, s.obj, rc); err != nil {
		d.fail(err)
		return true
	}
	s.desired = s.obj.DeepCopy()
	d.Structure = rc.Structure(gvk)
	return false
}

// customizations: the live object's opt-out, report-only mode, patch and
// mask, each understood or the object left as it is.
func (s *evaluation) customizations() bool {
	d, obj := &s.d, s.obj
	if d.Live == nil {
		return false
	}
	liveAnn := d.Live.GetAnnotations()
	mode, err := annotations.ParseMode(liveAnn)
	switch {
	case err != nil:
		// An opt-out that is not understood is read as the opt-out.
		d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.Mode, err.Error()+"; the object is left as it is", Malformed
		return true
	case mode == annotations.ModeUnmanagedValue:
		d.Verdict, d.Reason = VerdictUnmanaged, fmt.Sprintf("object is annotated %s=%s", annotations.Mode, annotations.ModeUnmanaged)
		d.Customizations = []string{"unmanaged"}
		return true
	case mode == annotations.ModeReportOnly:
		d.ReportOnly = true
		d.Customizations = append(d.Customizations, "report-only")
	}
	if strings.TrimSpace(liveAnn[annotations.ShippedPaused]) == "true" {
		// Someone fought the shipped autopilot over it, or paused it: the
		// meaning is not this autopilot's to guess.
		d.Verdict = VerdictConflict
		d.Reason = fmt.Sprintf("annotated %s=true, the mark of the autopilot OpenShift Virtualization ships after an edit war (or a person's pause of it): left as it is; remove it to hand the object to this autopilot, or set %s=%s to keep it", annotations.ShippedPaused, annotations.Mode, annotations.ModeUnmanaged)
		d.Customizations = append(d.Customizations, "reconcile-paused")
		return true
	}
	if v, ok := liveAnn[annotations.Patch]; ok {
		d.Customizations = append(d.Customizations, "patch")
		patch, err := annotations.ParsePatch(v)
		if err == nil {
			s.desired, err = overrides.ApplyPatch(s.desired, patch)
		}
		if err != nil {
			d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.Patch, err.Error(), invalidReason(err)
			return true
		}
		if escalates(d, obj, s.desired, annotations.Patch) {
			return true
		}
	}
	if v, ok := liveAnn[annotations.IgnoreFields]; ok {
		d.Customizations = append(d.Customizations, "ignore-fields")
		ptrs, err := annotations.ParseIgnoreFields(v)
		if err == nil {
			d.Unresolved = overrides.Mask(s.desired, d.Live, ptrs, annotations.FieldManager, d.Structure)
		}
		if err != nil {
			d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.IgnoreFields, err.Error(), invalidReason(err)
			return true
		}
		if escalates(d, obj, s.desired, annotations.IgnoreFields) {
			return true
		}
	}
	return false
}

// yield: fields their declared owners hold are left to them; the object
// is judged as it will be, with their values.
func (s *evaluation) yield() bool {
	d := &s.d
	s.judged = s.desired
	d.Deferred = s.kubeletLeft
	if d.Live == nil {
		return false
	}
	yielded, unreadable := yieldTo(s.desired, d.Live, s.rc, d.Structure)
	if unreadable != "" {
		d.Verdict, d.Reason = VerdictRetained, unreadable
		return true
	}
	d.Deferred = append(d.Deferred, yielded...)
	// Judged as it will be: the owners' values where they are kept.
	s.judged = withLive(s.desired, d.Live, yielded)
	return false
}

// checks: exclusive scopes (another actor's object configuring the same
// thing) and the node's own checks of kubelet settings, on what would be
// applied (a patch may change the scope).
func (s *evaluation) checks() bool {
	d, a := &s.d, s.d.Asset
	clash, err := Clash(a, s.judged, s.rc)
	switch {
	case err != nil:
		d.fail(err)
		return true
	case clash != "":
		d.Verdict, d.Reason = VerdictConflict, clash
		return true
	}
	if spec, kubelet, err := kubeletSpec(s.judged); err != nil || kubelet {
		// A patch can break the kubelet's memory arithmetic; a pool whose
		// kubelets cannot start is an outage, so such a patch is refused.
		if err == nil {
			err = reservation.Check(spec)
		}
		if err != nil {
			kind := s.obj.GetKind()
			if slices.Contains(d.Customizations, "patch") {
				d.Verdict, d.Annotation, d.InvalidReason = VerdictInvalid, annotations.Patch, Unsafe
				d.Reason = fmt.Sprintf("the patched %s would stop the pool's kubelets from starting: %v", kind, err)
			} else {
				d.fail(fmt.Errorf("rendered %s fails the node's checks (a template bug): %w", kind, err))
			}
			return true
		}
	}
	return false
}

// settleStamp marks the object as the autopilot's, stamps the prints the
// settle rule and the fact budget judge it by (kept while they would say
// nothing new), and keeps what the cluster holds of its bookkeeping.
func (s *evaluation) settleStamp() bool {
	e, d, a, rc, obj, desired := s.e, &s.d, s.d.Asset, s.rc, s.obj, s.desired
	stamp(desired, a)
	if Settles(a, obj.GetKind()) {
		var err error
		if d.FactPrint, err = FactPrint(a, rc, e.Renderer.ReadsOf(a.Path)); err != nil {
			d.fail(err)
			return true
		}
		if d.IntentPrint, err = IntentPrint(a, rc, e.Renderer.ReadsOf(a.Path)); err != nil {
			d.fail(err)
			return true
		}
		d.ObjectPrint = objectPrint(obj)
		setAnnotation(desired, annotations.Facts, stampOf(d))
		if d.Live != nil {
			// The record of fact-driven rewrites (pkg/gate's budget) stays
			// as the cluster holds it; only such a write adds to it.
			if v, ok := d.Live.GetAnnotations()[annotations.FactRollouts]; ok {
				setAnnotation(desired, annotations.FactRollouts, v)
			}
		}
	}
	if d.Live != nil {
		if adopted(d.Live) {
			// Once adopted, always: the annotation is ours to keep.
			setAnnotation(desired, annotations.Adopted, "true")
		}
		if a.Shared {
			// The merge was rendered from this copy: if someone changed the
			// object since, the apply fails (409) and the next pass merges
			// into their change instead of writing over it.
			desired.SetResourceVersion(d.Live.GetResourceVersion())
		}
	}
	return false
}

// stampOf is the settle stamp d's object carries: its prints now, or the
// live object's stamp where rewriting it would say nothing new.
func stampOf(d *Decision) string {
	now := d.SettlePrint()
	if d.Live == nil {
		return now.Stamp()
	}
	was := d.Live.GetAnnotations()[annotations.Facts]
	switch p := settle.ParseStamp(was); {
	case p.Object == d.ObjectPrint && (p.Intent == now.Intent || p.Intent == ""):
		// The facts changed nothing the object is rendered from: its stamp
		// stays as written, so a fact that changes no object costs no
		// write. (A person's change that renders the same object is
		// stamped: a later fact change must not read as theirs. A stamp
		// without intent, of an earlier release, stays until the next real
		// write: it tells no intent, so it charges nothing.)
		return was
	case p.Object == "" && p.Facts == d.FactPrint:
		// An earlier release's stamp (facts alone) of the same facts:
		// kept, so an upgrade writes nothing for it (and a report-only
		// object does not read as drifted). One of an earlier scheme is
		// replaced with the next real write only (apply.Syncer: the stamp
		// alone is no drift).
		return was
	}
	return now.Stamp()
}
