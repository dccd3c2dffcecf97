package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/admission"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rbac"
)

// admissionView is what the autopilot last knew of the admission policy
// bounding its writes, and who it is.
type admissionView struct {
	mu     sync.Mutex
	state  admission.State
	reason string
	// user is the autopilot's identity (a SelfSubjectReview); asked again
	// at most once per resync while unknown.
	user      string
	userAsked time.Time
	// want is the policy generated for user (nil: not generated, or user
	// is not a ServiceAccount).
	want     *admission.Expected
	wantUser string
}

// judgeAdmission reports whether the admission policy is in place: a
// metric, one log line when the state changes, the health view. Its
// objects are watched by name, so this reads the cache.
func (r *Reconciler) judgeAdmission(ctx context.Context) {
	v := &r.admission
	v.mu.Lock()
	user, ask := v.user, v.user == "" && time.Since(v.userAsked) > r.opts.Resync
	v.mu.Unlock()
	if ask {
		ssr := &authenticationv1.SelfSubjectReview{}
		err := r.writer.Create(ctx, ssr)
		v.mu.Lock()
		v.userAsked = time.Now()
		if err == nil {
			v.user, user = ssr.Status.UserInfo.Username, ssr.Status.UserInfo.Username
		}
		v.mu.Unlock()
	}
	state, reason := admission.Judge(ctx, r.reader, user, r.expectedPolicy(ctx, user))
	v.mu.Lock()
	changed := state != v.state || reason != v.reason
	v.state, v.reason = state, reason
	v.mu.Unlock()
	for _, s := range admission.States {
		g := 0.0
		if s == state {
			g = 1
		}
		metrics.AdmissionPolicy.WithLabelValues(string(s)).Set(g)
	}
	if changed {
		log.FromContext(ctx).Info("admission policy bounding the autopilot's writes", "state", string(state), "reason", reason, "action", "report")
	}
}

// admissionState is the last judgement, for the health view.
func (r *Reconciler) admissionState() (admission.State, string) {
	r.admission.mu.Lock()
	defer r.admission.mu.Unlock()
	return r.admission.state, r.admission.reason
}

// expectedPolicy is the admission policy cmd/rbac-gen generates for user
// (rbac.AdmissionPolicy, the same code), generated once per identity: the
// cluster's is judged against it, not by its existence. nil for an
// identity that is not a ServiceAccount's.
func (r *Reconciler) expectedPolicy(ctx context.Context, user string) *admission.Expected {
	v := &r.admission
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.wantUser == user {
		return v.want
	}
	v.wantUser, v.want = user, nil
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	ns, _, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || r.opts.Catalog == nil {
		return nil
	}
	statusNS := r.opts.StatusNamespace
	if statusNS == "" {
		statusNS = ns
	}
	extra := []rbac.Object{{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: statusNS, Name: fleetstatus.Name}}
	policy, binding, err := rbac.AdmissionPolicy(assets.FS, r.opts.Catalog, r.opts.Tombstones, r.opts.Namespace, user, extra, nil)
	if err != nil {
		log.FromContext(ctx).Error(err, "cannot generate the admission policy to judge the cluster's by; judging its existence only", "action", "keep")
		return nil
	}
	v.want = &admission.Expected{Policy: policy, Binding: binding}
	return v.want
}
