package engine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/overrides"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
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
