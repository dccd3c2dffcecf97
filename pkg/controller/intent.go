package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// freshIntent re-reads the HCO from the API server before anything is
// deleted, once per reconcile and only then. The HCO cache and a managed
// kind's cache are fed by different watches: a reconcile woken by one may
// still see the HCO before a person's last edit (an exclusion just added, a
// switch just turned back on). A deletion, and a write that goes with one,
// must follow that last word; a reconcile that deletes nothing (nor would
// send such a write) costs no request for it.
type freshIntent struct {
	reader    client.Reader
	namespace string
	cached    *rendercontext.RenderContext

	done  bool
	fresh *rendercontext.RenderContext
	err   error
}

// context returns the render context with the HCO as the API server has it now.
func (f *freshIntent) context(ctx context.Context) (*rendercontext.RenderContext, error) {
	if !f.done {
		f.done = true
		hco, err := gather.HCO(ctx, f.reader, f.namespace)
		if err != nil {
			f.err = fmt.Errorf("re-read the HyperConverged before deleting: %w", err)
			return nil, f.err
		}
		f.fresh = f.cached.WithHCO(hco)
	}
	return f.fresh, f.err
}
