package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/overrides"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/reservation"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// LiveReader finds the live copy of an object; nil, nil when it does not exist.
type LiveReader interface {
	Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
}

// OwnedReader is an optional LiveReader method: read an object only if it
// carries the autopilot's label (nil, nil otherwise). The controller
// serves it from its label-filtered cache, so inactive assets cost no
// request; a LiveReader without it is read with Live.
type OwnedReader interface {
	Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
}

// Evaluator decides, for each asset, what the autopilot would do.
type Evaluator struct {
	Renderer *render.Renderer
	// Hold, when set, keeps an asset out of a walk (the controller's
	// per-asset backoff after a failure): its decision is Failed and Held,
	// with why, and nothing is rendered or read for it.
	Hold func(a *catalog.Asset) (why string, held bool)
}

// Evaluate runs conditions, render, dependency check, root exclusion,
// opt-out, patch and mask for one asset. live may be nil (offline).
func (e *Evaluator) Evaluate(ctx context.Context, a *catalog.Asset, rc *rendercontext.RenderContext, live LiveReader) Decision {
	d := Decision{Asset: a}
	if c, waiting := Waiting(a, rc); waiting {
		d.Verdict = VerdictMissingDependency
		d.Reason = "waiting: " + c.String()
		if c.Type == catalog.CondImage {
			d.Reason = fmt.Sprintf("waiting for the operand image %s: set %s on the autopilot's Deployment (OLM sets it from the bundle)", c.Name, catalog.ImageEnv(c.Name))
		}
		d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
		return d
	}
	ok, why, intentOff, err := ConditionsHold(a, rc)
	if _, invalid := annotations.AsInvalid(err); err != nil && !invalid {
		// A fact that cannot be known is never read as false.
		d.fail(err)
		return d
	}
	if err != nil {
		// A switch that is not understood: the asset is left exactly as
		// it is (never written, never removed) until it is fixed.
		e.invalidInput(ctx, &d, rc, live, err)
		return d
	}
	if !ok {
		d.Verdict, d.Reason, d.IntentOff = VerdictInactive, why, intentOff
		// Still render (best effort) so the caller knows which object the
		// asset owns, to remove or retain it.
		d.Rendered, _ = e.Renderer.RenderHead(a.Path, rc, a.Params)
		if d.Rendered != nil && Settles(a, d.Rendered.GetKind()) {
			// The facts while it is off: a fact turning it on is a change.
			d.FactPrint, _ = FactPrint(a, rc, e.Renderer.ReadsOf(a.Path))
		}
		e.inactive(ctx, &d, rc, live)
		return d
	}
	obj, err := e.Renderer.Render(a.Path, rc, a.Params, nil)
	if _, waits := render.AsWait(err); waits && live != nil && e.Renderer.UsesLive(a.Path) {
		// A template that keeps live state may not need what it waits for
		// once it sees the object as it is (an existing LokiStack's class).
		if head, _ := e.Renderer.RenderHead(a.Path, rc, a.Params); head != nil && rc.KindAvailable(head.GroupVersionKind()) {
			l, lerr := live.Live(ctx, head.GroupVersionKind(), head.GetNamespace(), head.GetName())
			if lerr != nil {
				d.fail(fmt.Errorf("read live object: %w", lerr))
				return d
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
		return d
	}
	if err != nil {
		if _, ok := annotations.AsInvalid(err); ok {
			// The template read an HCO annotation that is not understood.
			e.invalidInput(ctx, &d, rc, live, err)
			return d
		}
		d.fail(err)
		return d
	}
	d.Rendered = obj
	gvk := obj.GroupVersionKind()
	// A hosted control plane's guest serves no node configuration kind:
	// its objects go to a NodePool, once every other rule (the gate CRD,
	// the admin's exclusions) has been applied to them as anywhere else.
	hosted := false
	if !rc.KindAvailable(gvk) {
		if !rc.Topology.ExternalControlPlane || !catalog.RebootKinds[gvk.Kind] {
			d.Verdict, d.Reason = VerdictMissingDependency, fmt.Sprintf("%s is not served by the cluster (CRD not installed)", gvkString(gvk))
			return d
		}
		hosted = true
	}
	if a.GateCRD != "" && !rc.CRDInstalled(a.GateCRD) {
		d.Verdict, d.Reason = VerdictMissingDependency, fmt.Sprintf("CRD %s is not installed", a.GateCRD)
		return d
	}
	if r, hit := rc.Exclusions.Match(obj.GetKind(), obj.GetNamespace(), obj.GetName()); hit {
		d.Verdict, d.Reason = VerdictExcluded, fmt.Sprintf("listed in HCO %s as %q", annotations.DisabledResources, r.String())
		return d
	}
	if hosted {
		d.Verdict, d.Reason = VerdictNodePool, fmt.Sprintf("a hosted control plane: the guest serves no %s; node configuration goes into a NodePool's spec.config on the management cluster ('render --output nodepool' writes it; each change rolls the NodePool)", gvk.Kind)
		return d
	}
	if live != nil {
		if d.Live, err = live.Live(ctx, gvk, obj.GetNamespace(), obj.GetName()); err != nil {
			d.fail(fmt.Errorf("read live object: %w", err))
			return d
		}
	}
	if d.Live != nil && e.Renderer.UsesLive(a.Path) {
		// Templates that keep some of the live state (for example the
		// descheduler's preserved profiles) render again, seeing it.
		if obj, err = e.Renderer.Render(a.Path, rc, a.Params, d.Live); err != nil {
			if w, waits := render.AsWait(err); waits {
				d.Verdict, d.Reason = VerdictMissingDependency, w.Error()
				return d
			}
			d.fail(err)
			return d
		}
		d.Rendered = obj
	}
	// A drop-in leaves to an admin's KubeletConfig the settings it holds.
	kubeletLeft, err := leaveToKubeletConfigs(a, obj, rc)
	if err != nil {
		d.fail(err)
		return d
	}
	desired := obj.DeepCopy()
	d.Structure = rc.Structure(gvk)
	if d.Live != nil {
		liveAnn := d.Live.GetAnnotations()
		mode, err := annotations.ParseMode(liveAnn)
		switch {
		case err != nil:
			// An opt-out that is not understood is read as the opt-out.
			d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.Mode, err.Error()+"; the object is left as it is", Malformed
			return d
		case mode == annotations.ModeUnmanagedValue:
			d.Verdict, d.Reason = VerdictUnmanaged, fmt.Sprintf("object is annotated %s=%s", annotations.Mode, annotations.ModeUnmanaged)
			d.Customizations = []string{"unmanaged"}
			return d
		case mode == annotations.ModeReportOnly:
			d.ReportOnly = true
			d.Customizations = append(d.Customizations, "report-only")
		}
		if v, ok := liveAnn[annotations.Patch]; ok {
			d.Customizations = append(d.Customizations, "patch")
			patch, err := annotations.ParsePatch(v)
			if err == nil {
				desired, err = overrides.ApplyPatch(desired, patch)
			}
			if err != nil {
				d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.Patch, err.Error(), invalidReason(err)
				return d
			}
			if escalates(&d, obj, desired, annotations.Patch) {
				return d
			}
		}
		if v, ok := liveAnn[annotations.IgnoreFields]; ok {
			d.Customizations = append(d.Customizations, "ignore-fields")
			ptrs, err := annotations.ParseIgnoreFields(v)
			if err == nil {
				d.Unresolved = overrides.Mask(desired, d.Live, ptrs, annotations.FieldManager, d.Structure)
			}
			if err != nil {
				d.Verdict, d.Annotation, d.Reason, d.InvalidReason = VerdictInvalid, annotations.IgnoreFields, err.Error(), invalidReason(err)
				return d
			}
			if escalates(&d, obj, desired, annotations.IgnoreFields) {
				return d
			}
		}
	}
	judged := desired
	d.Deferred = kubeletLeft
	if d.Live != nil {
		yielded, unreadable := yieldTo(desired, d.Live, rc, d.Structure)
		if unreadable != "" {
			d.Verdict, d.Reason = VerdictRetained, unreadable
			return d
		}
		d.Deferred = append(d.Deferred, yielded...)
		// Judged as it will be: the owners' values where they are kept.
		judged = withLive(desired, d.Live, yielded)
	}
	// Judged on what would be applied: a patch may change the scope.
	clash, err := Clash(a, judged, rc)
	switch {
	case err != nil:
		d.fail(err)
		return d
	case clash != "":
		d.Verdict, d.Reason = VerdictConflict, clash
		return d
	}
	if spec, kubelet, err := kubeletSpec(judged); err != nil || kubelet {
		// A patch can break the kubelet's memory arithmetic; a pool whose
		// kubelets cannot start is an outage, so such a patch is refused.
		if err == nil {
			err = reservation.Check(spec)
		}
		if err != nil {
			if slices.Contains(d.Customizations, "patch") {
				d.Verdict, d.Annotation, d.InvalidReason = VerdictInvalid, annotations.Patch, Unsafe
				d.Reason = fmt.Sprintf("the patched %s would stop the pool's kubelets from starting: %v", gvk.Kind, err)
			} else {
				d.fail(fmt.Errorf("rendered %s fails the node's checks (a template bug): %w", gvk.Kind, err))
			}
			return d
		}
	}
	stamp(desired, a)
	if Settles(a, gvk.Kind) {
		if d.FactPrint, err = FactPrint(a, rc, e.Renderer.ReadsOf(a.Path)); err != nil {
			d.fail(err)
			return d
		}
		if d.IntentPrint, err = IntentPrint(a, rc, e.Renderer.ReadsOf(a.Path)); err != nil {
			d.fail(err)
			return d
		}
		d.ObjectPrint = objectPrint(obj)
		now := d.SettlePrint()
		stampValue := now.Stamp()
		if d.Live != nil {
			was := d.Live.GetAnnotations()[annotations.Facts]
			switch p := settle.ParseStamp(was); {
			case p.Object == d.ObjectPrint && (p.Intent == now.Intent || p.Intent == ""):
				// The facts changed nothing the object is rendered from:
				// its stamp stays as written, so a fact that changes no
				// object costs no write. (A person's change that renders
				// the same object is stamped: a later fact change must not
				// read as theirs. A stamp without intent, of an earlier
				// release, stays until the next real write: it tells no
				// intent, so it charges nothing.)
				stampValue = was
			case p.Object == "" && p.Facts == d.FactPrint:
				// An earlier release's stamp (facts alone) of the same
				// facts: kept, so an upgrade writes nothing for it (and a
				// report-only object does not read as drifted). One of an
				// earlier scheme is replaced with the next real write
				// only (apply.Syncer: the stamp alone is no drift).
				stampValue = was
			}
		}
		setAnnotation(desired, annotations.Facts, stampValue)
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
	d.Desired = desired
	d.Verdict = VerdictIncluded
	d.NodeActions = nodeActions(&d, rc)
	return d
}

// kubeletSpec is the kubelet settings u carries, in a KubeletConfig's
// spec shape: a KubeletConfig's spec, or what a MachineConfig's kubelet
// drop-ins and sizing file set; kubelet is false when u carries none.
func kubeletSpec(u *unstructured.Unstructured) (spec map[string]any, kubelet bool, err error) {
	switch u.GroupVersionKind() {
	case rendercontext.KubeletConfigGVK:
		spec, _, _ = unstructured.NestedMap(u.Object, "spec")
		return spec, true, nil
	case rendercontext.MachineConfigGVK:
		dropIns, sizing, err := kubeletdropin.Files(u)
		if err != nil || (len(dropIns) == 0 && sizing == nil) {
			return nil, false, err
		}
		spec, err = kubeletdropin.Settings(u)
		return spec, true, err
	}
	return nil, false, nil
}

// inactive finds what an inactive asset created. It stays (Retained,
// never written) unless a person turned the asset off: a derived fact that
// stops holding (hardware, topology) removes nothing.
func (e *Evaluator) inactive(ctx context.Context, d *Decision, rc *rendercontext.RenderContext, live LiveReader) {
	if live == nil || d.Rendered == nil || !rc.KindAvailable(d.Rendered.GroupVersionKind()) {
		return
	}
	obj := d.Rendered
	var o *unstructured.Unstructured
	var err error
	if owned, ok := live.(OwnedReader); ok {
		o, err = owned.Owned(ctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
	} else {
		o, err = live.Live(ctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
	}
	if err != nil {
		// Unknown is never read as absent, nor as a reason to delete.
		d.fail(fmt.Errorf("read live object: %w", err))
		return
	}
	if !CreatedFor(d, o) {
		return
	}
	d.Live = o
	why, cascades := Cascades(o)
	switch {
	case d.Asset.Shared:
		d.Verdict = VerdictRetained
		d.Reason += "; the object is shared (another operator reads it, an admin may have written it): kept as it is, with what was merged into it"
	case !d.IntentOff || !d.Asset.OptIn():
		d.Verdict = VerdictRetained
		d.Reason += "; the object it created is kept as it is and not written until it holds again"
	case cascades:
		// Turned off, but its deletion would take more than the autopilot's.
		d.Verdict = VerdictRetained
		d.Reason += "; " + why
	}
}

// invalidInput marks d Invalid for an HCO annotation it reads that is not
// understood. The live object (if any) is found only to name it in the
// report; it is neither written nor removed.
func (e *Evaluator) invalidInput(ctx context.Context, d *Decision, rc *rendercontext.RenderContext, live LiveReader, err error) {
	inv, _ := annotations.AsInvalid(err)
	d.Verdict, d.Reason, d.InvalidReason = VerdictInvalid, err.Error()+"; the asset is left as it is", Malformed
	if inv != nil {
		d.Annotation = inv.Annotation
	}
	naming := *rc
	naming.NamingOnly = true
	d.Rendered, _ = e.Renderer.RenderHead(d.Asset.Path, &naming, d.Asset.Params)
	if live == nil || d.Rendered == nil {
		return
	}
	if owned, ok := live.(OwnedReader); ok {
		d.Live, _ = owned.Owned(ctx, d.Rendered.GroupVersionKind(), d.Rendered.GetNamespace(), d.Rendered.GetName())
	}
}

// stamp marks desired as the autopilot's: the label keeps it in the
// manager's cache, the annotation ties it to its asset.
func stamp(u *unstructured.Unstructured, a *catalog.Asset) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[annotations.ManagedByLabel] = annotations.ManagedByValue
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotations.Asset] = a.Name
	if a.Shared {
		ann[annotations.Shared] = "true"
	}
	u.SetAnnotations(ann)
}

// adopted reports whether live is an object the autopilot did not create:
// found without its label (an admin's, or another operator's), or adopted
// before.
func adopted(live *unstructured.Unstructured) bool {
	return annotations.Protects(live.GetAnnotations(), annotations.Adopted) ||
		!annotations.Labelled(live.GetLabels())
}

func setAnnotation(u *unstructured.Unstructured, k, v string) {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[k] = v
	u.SetAnnotations(ann)
}

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

func invalidReason(err error) InvalidReason {
	switch {
	case errors.Is(err, annotations.ErrProtected):
		return ProtectedPath
	case errors.Is(err, overrides.ErrDoesNotApply):
		return DoesNotApply
	}
	return Malformed
}
