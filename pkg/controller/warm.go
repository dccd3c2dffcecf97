package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// assetKinds renders every asset once, without facts, for the kind it
// manages (a template's kind does not depend on the cluster).
func assetKinds(cat *catalog.Catalog, r *render.Renderer, namespace string) map[string]schema.GroupVersionKind {
	out := map[string]schema.GroupVersionKind{}
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.Render(a.Path, &rendercontext.RenderContext{Namespace: namespace, AssumeAllKinds: true}, a.Params, nil)
		if err == nil {
			out[a.Name] = u.GroupVersionKind()
		}
	}
	return out
}

// warm starts, without waiting, the informer of every kind this reconcile
// will read, so their initial lists run together instead of one after
// another as the plan reaches each asset (a cold start waited for each in
// turn). These are the kinds the reconcile wants watched anyway: active
// assets of installed kinds.
func (r *Reconciler) warm(ctx context.Context, rc *rendercontext.RenderContext, act engine.Activation) {
	for i := range r.opts.Catalog.Assets {
		a := &r.opts.Catalog.Assets[i]
		gvk, ok := r.kinds[a.Name]
		if !ok || !rc.KindAvailable(gvk) {
			continue
		}
		if allowed, _ := act.Allows(a); !allowed {
			continue
		}
		_, _ = r.caches.forGVK(gvk).GetInformer(ctx, unstructuredOf(gvk), cache.BlockUntilSynced(false))
	}
}
