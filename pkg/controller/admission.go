package controller

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/admission"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
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
	state, reason := admission.Judge(ctx, r.reader, user)
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
