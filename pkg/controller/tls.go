package controller

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	r.serveTLS(ctx, rc.KindAvailable(tlsprofile.APIServerGVK))
}

// serveTLS serves the profile APIServer/cluster names (served: its kind
// is served, so reading it costs no discovery request).
func (r *Reconciler) serveTLS(ctx context.Context, served bool) {
	if r.opts.TLS == nil {
		return
	}
	var obj *unstructured.Unstructured
	if served {
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

// tlsFollower serves the cluster's TLS profile on every replica, the
// standbys' too (their metrics and probe endpoints serve TLS as well),
// from the caches: at start and on every change of APIServer/cluster or a
// CRD. The leader's reconcile follows it too (followTLS).
type tlsFollower struct{ r *Reconciler }

// NeedLeaderElection: every replica serves.
func (tlsFollower) NeedLeaderElection() bool { return false }

// Start follows until ctx ends.
func (t tlsFollower) Start(ctx context.Context) error {
	key := rendercontext.ObjectKey{GVK: tlsprofile.APIServerGVK, Name: tlsprofile.APIServerName}
	served := func(ctx context.Context) bool {
		ok, err := t.r.apiServerServed(ctx)
		return ok && err == nil
	}
	return t.r.reader.Follow(ctx, key, served, func(ctx context.Context) {
		ok, err := t.r.apiServerServed(ctx)
		if err != nil {
			// Unknown is never read as "not served" (which serves
			// Intermediate): what is served is kept.
			t.r.tlsProblem(ctx, err, "cannot read the CRDs; the TLS profile served is kept")
			return
		}
		t.r.serveTLS(ctx, ok)
	})
}

// apiServerServed reports, from the CRD cache, whether the APIServer kind
// is served (plain Kubernetes has none); err when the cache cannot say.
func (r *Reconciler) apiServerServed(ctx context.Context) (bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := r.reader.Get(ctx, client.ObjectKey{Name: "apiservers." + tlsprofile.APIServerGVK.Group}, crd)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == tlsprofile.APIServerGVK.Version && v.Served {
			return true, nil
		}
	}
	return false, nil
}
