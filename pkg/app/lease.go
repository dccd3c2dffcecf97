package app

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// LeaseTimings are the leader lease's durations; a zero field takes the
// cluster's default (leaseDefaults).
type LeaseTimings struct {
	// Duration: how long a standby waits for a lease its holder stopped
	// renewing without releasing it (a crashed leader).
	Duration time.Duration
	// RenewDeadline: how long the leader keeps trying to renew before it
	// gives up leading and the process exits.
	RenewDeadline time.Duration
	// RetryPeriod: how often the leader renews and a standby tries to
	// acquire (a lease released on shutdown is taken within one period).
	RetryPeriod time.Duration
}

// leaseDefaults are OpenShift's conventions for a component's lease,
// from openshift/library-go pkg/config/leaderelection/leaderelection.go:
// LeaderElectionDefaulting (137s, 107s, 26s: the leader outlives 78s of
// kube-apiserver downtime, enough for a rollout of a highly available
// control plane) and LeaderElectionSNOConfig (270s, 240s, 60s on a single
// node, whose one kube-apiserver is down for each of its rollouts: 180s).
// controller-runtime's own defaults (15s, 10s, 2s) make the leader exit on
// 10s without the API server: a restart and an alert for every upgrade.
// Any other topology, or none known (not OpenShift, Infrastructure
// unreadable), takes the highly available values, as library-go does.
func leaseDefaults(topology string) LeaseTimings {
	if topology == rendercontext.SingleReplicaTopology {
		return LeaseTimings{Duration: 270 * time.Second, RenewDeadline: 240 * time.Second, RetryPeriod: 60 * time.Second}
	}
	return LeaseTimings{Duration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}
}

// or fills the zero fields of t from d.
func (t LeaseTimings) or(d LeaseTimings) LeaseTimings {
	if t.Duration == 0 {
		t.Duration = d.Duration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = d.RenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = d.RetryPeriod
	}
	return t
}

func (t LeaseTimings) complete() bool {
	return t.Duration != 0 && t.RenewDeadline != 0 && t.RetryPeriod != 0
}

// controlPlaneTopology reads Infrastructure "cluster"'s
// status.controlPlaneTopology: "" when the kind or the object does not
// exist (not OpenShift).
func controlPlaneTopology(ctx context.Context, c client.Reader) (string, error) {
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(rendercontext.InfrastructureGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: "cluster"}, infra); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return "", nil
		}
		return "", err
	}
	return rendercontext.ControlPlaneTopology(infra), nil
}

// leaseFor completes the configured timings with the cluster's defaults,
// reading its topology only when a field is left to it.
func leaseFor(configured LeaseTimings, boot client.Reader, bootErr error) LeaseTimings {
	if configured.complete() {
		return configured
	}
	topology, err := "", bootErr
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		topology, err = controlPlaneTopology(ctx, boot)
	}
	lease := configured.or(leaseDefaults(topology))
	if err != nil {
		ctrl.Log.Error(err, "cannot read the control plane topology; the leader lease takes a highly available cluster's durations", "action", "keep",
			"leaseDuration", lease.Duration.String(), "renewDeadline", lease.RenewDeadline.String(), "retryPeriod", lease.RetryPeriod.String())
		return lease
	}
	ctrl.Log.Info("leader lease", "controlPlaneTopology", topology,
		"leaseDuration", lease.Duration.String(), "renewDeadline", lease.RenewDeadline.String(), "retryPeriod", lease.RetryPeriod.String())
	return lease
}
