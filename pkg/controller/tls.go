package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tlsprofile"
)

// followTLS serves the cluster's TLS profile on the TLS endpoints from
// the next handshake: APIServer/cluster is watched by name, so this reads
// the cache. Without the kind (plain Kubernetes) or the object,
// Intermediate; a profile not understood serves the strictest (TLS 1.3
// only), never a weaker guess; a read that fails keeps what is served.
// Both say why.
func (r *Reconciler) followTLS(ctx context.Context, rc *rendercontext.RenderContext) {
	if r.opts.TLS == nil {
		return
	}
	var obj *unstructured.Unstructured
	if rc.KindAvailable(tlsprofile.APIServerGVK) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(tlsprofile.APIServerGVK)
		switch err := r.reader.Get(ctx, client.ObjectKey{Name: tlsprofile.APIServerName}, u); {
		case err == nil:
			obj = u
		case apierrors.IsNotFound(err):
		default:
			r.tlsProblem(ctx, err, "cannot read APIServer/cluster; the TLS profile served is kept")
			return
		}
	}
	p, err := tlsprofile.FromAPIServer(obj)
	if err != nil {
		r.tlsProblem(ctx, err, "TLS profile not understood; serving the strictest (TLS 1.3 only) until it is fixed")
		p = tlsprofile.Strictest()
	} else {
		r.tlsErr.Store(nil)
	}
	if r.opts.TLS.Set(p) {
		log.FromContext(ctx).Info("TLS profile served", "profile", p.String(), "action", "report")
	}
}

// tlsProblem logs err once while it lasts.
func (r *Reconciler) tlsProblem(ctx context.Context, err error, msg string) {
	s := err.Error()
	if old := r.tlsErr.Swap(&s); old == nil || *old != s {
		log.FromContext(ctx).Error(err, msg, "action", "keep")
	}
}
