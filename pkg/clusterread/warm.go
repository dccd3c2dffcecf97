package clusterread

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// factGVKs are the kinds every reconcile reads whole (facts cache), by CRD.
var factGVKs = []schema.GroupVersionKind{rendercontext.HCOGVK, rendercontext.InfrastructureGVK, rendercontext.SchedulerGVK,
	rendercontext.KubeletConfigGVK, rendercontext.NodeHealthCheckGVK, rendercontext.PoolGVK, rendercontext.StorageProfileGVK}

// warmAtStart warms as soon as the manager runs, once the CRD informer has
// synced, instead of at the first reconcile: the controller first waits
// for its own sources to sync, polling every 100 ms, and the informers'
// initial lists can run meanwhile.
func (r *Reader) warmAtStart(ctx context.Context) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	inf, err := r.managed.GetInformer(ctx, crd, cache.BlockUntilSynced(false))
	if err != nil {
		return nil // the first reconcile warms, and reports
	}
	wctx, cancel := context.WithTimeout(ctx, r.gate.timeout)
	defer cancel()
	if waitSynced(wctx, inf.HasSynced) {
		r.Warm(ctx)
	}
	return nil
}

// Warm starts, without waiting, the informer of every kind a reconcile
// reads whose CRD is installed (fact kinds and the assets' kinds), so their
// initial lists run together instead of one after another as Gather and the
// plan reach each (a cold start waited for each in turn). They are the
// kinds the reconcile keeps watched anyway (paused assets' kinds included).
func (r *Reader) Warm(ctx context.Context) {
	if r.warmed.Load() {
		return // every kind has its informer; nothing to list for
	}
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := r.List(ctx, &crds); err != nil {
		return // Gather reports it
	}
	// A kind is served when a CRD names its group and kind (spec.names,
	// never a guessed plural) and serves its version.
	served := map[schema.GroupVersionKind]bool{}
	for i := range crds.Items {
		c := &crds.Items[i]
		for _, v := range c.Spec.Versions {
			if v.Served {
				served[schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: c.Spec.Names.Kind}] = true
			}
		}
	}
	kinds := append([]schema.GroupVersionKind(nil), factGVKs...)
	for _, gvk := range r.kinds {
		if rendercontext.BuiltIn(gvk) {
			// Always served: start with the others (each first watch of a
			// kind may be answered 429 and retried after a second).
			_, _ = r.forGVK(gvk).GetInformer(ctx, unstructuredOf(gvk), cache.BlockUntilSynced(false))
			continue
		}
		kinds = append(kinds, gvk)
	}
	// Built-in fact kinds have no CRD to wait for.
	_, _ = r.forGVK(rendercontext.StorageClassGVK).GetInformer(ctx, unstructuredOf(rendercontext.StorageClassGVK), cache.BlockUntilSynced(false))
	all := true
	for _, gvk := range kinds {
		if !served[gvk] {
			all = false // a soft dependency may arrive: look again next time
			continue
		}
		_, _ = r.forGVK(gvk).GetInformer(ctx, unstructuredOf(gvk), cache.BlockUntilSynced(false))
	}
	// Once every kind is installed and started, later reconciles skip the
	// CRD list; a kind removed and re-installed is started on first read.
	r.warmed.Store(all)
}
