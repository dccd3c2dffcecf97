package report

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// IdleReason is a bounded code (a metric label value) for why the
// autopilot writes and deletes nothing.
type IdleReason string

// Why the autopilot is idle.
const (
	// IdleHCOCRDAbsent: the HyperConverged CRD is not installed.
	IdleHCOCRDAbsent IdleReason = "hco_crd_absent"
	// IdleHCOVersionUnserved: the CRD does not serve hco.kubevirt.io/v1.
	IdleHCOVersionUnserved IdleReason = "hco_version_unserved"
	// IdleHCOAbsent: no HyperConverged kubevirt-hyperconverged in the namespace.
	IdleHCOAbsent IdleReason = "hco_absent"
	// IdleHCOTerminating: the HyperConverged is being deleted.
	IdleHCOTerminating IdleReason = "hco_terminating"
	// IdlePaused: the HCO's platform.kubevirt.io/autopilot switch is "false"
	// (or lists nothing the catalog knows).
	IdlePaused IdleReason = "paused"
	// IdleFactsUnreadable: the cluster's facts (the HCO, nodes, pools,
	// CRDs) cannot be read, so nothing can be decided.
	IdleFactsUnreadable IdleReason = "facts_unreadable"
	// IdleBesideShipped: the autopilot OpenShift Virtualization ships acts
	// on the HCO's switch, or whether it does cannot be told (pkg/shipped).
	IdleBesideShipped IdleReason = "beside_shipped_autopilot"
)

// IdleReasons are every IdleReason, for the metric.
var IdleReasons = []IdleReason{IdleHCOCRDAbsent, IdleHCOVersionUnserved, IdleHCOAbsent, IdleHCOTerminating, IdlePaused, IdleFactsUnreadable, IdleBesideShipped}

// IdleStatus is why the autopilot is idle (/debug/health).
type IdleStatus struct {
	Reason  IdleReason `json:"reason"`
	Message string     `json:"message"`
}

// IdleFor explains a failed HCO read from the listed CRDs.
func IdleFor(f rendercontext.Facts, namespace string, err error) IdleStatus {
	var served []string
	found := false
	for i := range f.CRDs {
		if f.CRDs[i].Name != rendercontext.HCOCRD {
			continue
		}
		found = true
		for _, v := range f.CRDs[i].Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
	}
	switch {
	case !found:
		return IdleStatus{IdleHCOCRDAbsent, fmt.Sprintf("CRD %s is not installed: install OpenShift Virtualization (HCO)", rendercontext.HCOCRD)}
	case !slices.Contains(served, rendercontext.HCOVersion):
		return IdleStatus{IdleHCOVersionUnserved, fmt.Sprintf("CRD %s serves %s but not %s, the version the autopilot reads: upgrade the HCO operator",
			rendercontext.HCOCRD, strings.Join(served, ", "), rendercontext.HCOVersion)}
	case meta.IsNoMatchError(err):
		return IdleStatus{IdleHCOVersionUnserved, fmt.Sprintf("%s/%s is not discoverable yet: %v", rendercontext.HCOGroup, rendercontext.HCOVersion, err)}
	}
	return IdleStatus{IdleHCOAbsent, fmt.Sprintf("no HyperConverged %s in namespace %s (--namespace)", rendercontext.HCOName, namespace)}
}

// Idle records why nothing is written (zero value: not idle): one log
// line when it changes, a gauge per reason, /debug/health.
func (r *Reporter) Idle(ctx context.Context, i IdleStatus) {
	r.mu.Lock()
	prev := r.idle
	r.idle = i
	stale := i.Reason != "" && i.Reason != IdlePaused && i.Reason != IdleBesideShipped
	if stale {
		// Without an HCO (or its facts) the shipped autopilot is not
		// judged: its last state is not reported as current.
		r.beside = shipped.Verdict{}
	}
	r.mu.Unlock()
	if stale {
		for _, s := range shipped.States {
			metrics.ShippedAutopilot.WithLabelValues(string(s)).Set(0)
		}
	}
	for _, reason := range IdleReasons {
		v := 0.0
		if reason == i.Reason {
			v = 1
		}
		metrics.Idle.WithLabelValues(string(reason)).Set(v)
	}
	if prev == i {
		return
	}
	logger := log.FromContext(ctx)
	if i.Reason == "" {
		logger.Info("managing the platform", "action", "resume", "previousReason", string(prev.Reason))
		return
	}
	logger.Info("idle: nothing is written or deleted", "action", "idle", "reason", string(i.Reason), "message", i.Message)
}
