package app

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// The values are openshift/library-go pkg/config/leaderelection/
// leaderelection.go: LeaderElectionDefaulting for every topology but a
// single node, LeaderElectionSNOConfig for SingleReplica (the topologies
// are openshift/api config/v1 types_infrastructure.go TopologyMode).
func TestLeaseDefaults(t *testing.T) {
	ha := LeaseTimings{Duration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 26 * time.Second}
	sno := LeaseTimings{Duration: 270 * time.Second, RenewDeadline: 240 * time.Second, RetryPeriod: 60 * time.Second}
	for topology, want := range map[string]LeaseTimings{
		"HighlyAvailable": ha, "HighlyAvailableArbiter": ha, "DualReplica": ha, "External": ha, "": ha, "SomethingNew": ha,
		"SingleReplica": sno,
	} {
		got := leaseDefaults(topology)
		if got != want {
			t.Errorf("%q: %+v, want %+v", topology, got, want)
		}
		// library-go's arithmetic: the leader's last renewal attempt comes at
		// floor(renew/retry)*retry, so the API server may be down that long
		// less one period; a lease it holds outlives 60s (a highly available
		// control plane's rollout) or 180s (a single node's).
		lastRetry := got.RenewDeadline / got.RetryPeriod * got.RetryPeriod
		tolerance := map[bool]time.Duration{false: 60 * time.Second, true: 180 * time.Second}[topology == "SingleReplica"]
		if lastRetry-got.RetryPeriod < tolerance {
			t.Errorf("%q: the leader survives %s without the API server, want %s", topology, lastRetry-got.RetryPeriod, tolerance)
		}
		if skew := got.Duration - got.RenewDeadline; skew != 30*time.Second {
			t.Errorf("%q: clock skew tolerated %s, want 30s", topology, skew)
		}
		acceptedByClientGo(t, got)
	}
}

// acceptedByClientGo: client-go's own judge (leaderelection.NewLeaderElector)
// takes the timings, as the manager will at start.
func acceptedByClientGo(t *testing.T, l LeaseTimings) {
	t.Helper()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "name", nil, fake.NewClientset().CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: l.Duration, RenewDeadline: l.RenewDeadline, RetryPeriod: l.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	})
	if err != nil {
		t.Errorf("%+v: %v", l, err)
	}
}

func TestLeaseOrKeepsWhatWasGiven(t *testing.T) {
	d := leaseDefaults("")
	for _, given := range []LeaseTimings{
		{}, {Duration: time.Minute}, {RenewDeadline: 50 * time.Second}, {RetryPeriod: 5 * time.Second},
		{Duration: 300 * time.Second, RetryPeriod: 10 * time.Second}, {Duration: 1, RenewDeadline: 2, RetryPeriod: 3},
	} {
		got := given.or(d)
		for _, f := range []struct {
			name             string
			given, got, dflt time.Duration
		}{
			{"duration", given.Duration, got.Duration, d.Duration},
			{"renew deadline", given.RenewDeadline, got.RenewDeadline, d.RenewDeadline},
			{"retry period", given.RetryPeriod, got.RetryPeriod, d.RetryPeriod},
		} {
			want := f.given
			if want == 0 {
				want = f.dflt
			}
			if f.got != want {
				t.Errorf("%+v: %s %s, want %s", given, f.name, f.got, want)
			}
		}
		if !got.complete() {
			t.Errorf("%+v: incomplete after defaults: %+v", given, got)
		}
	}
}

func TestControlPlaneTopology(t *testing.T) {
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(rendercontext.InfrastructureGVK)
	infra.SetName("cluster")
	_ = unstructured.SetNestedField(infra.Object, "SingleReplica", "status", "controlPlaneTopology")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "config.openshift.io", Resource: "infrastructures"}, "cluster", errors.New("no"))
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		getErr  error
		want    string
		wantErr bool
	}{
		{name: "single node", objs: []client.Object{infra}, want: "SingleReplica"},
		{name: "no object: not OpenShift", want: ""},
		{name: "no kind: not OpenShift", getErr: &meta.NoKindMatchError{GroupKind: rendercontext.InfrastructureGVK.GroupKind()}, want: ""},
		{name: "forbidden: reported", getErr: forbidden, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := clientfake.NewClientBuilder().WithObjects(tc.objs...)
			if tc.getErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return tc.getErr
				}})
			}
			got, err := controlPlaneTopology(context.Background(), b.Build())
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("%q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLeaseForReadsOnlyWhatIsLeftToTheCluster(t *testing.T) {
	given := LeaseTimings{Duration: time.Minute, RenewDeadline: 40 * time.Second, RetryPeriod: 5 * time.Second}
	// Complete: no read (a nil reader would panic).
	if got := leaseFor(given, nil, nil); got != given {
		t.Errorf("complete timings changed: %+v", got)
	}
	// No client: a highly available cluster's durations for what is left.
	partial := LeaseTimings{RetryPeriod: 2 * time.Second}
	got := leaseFor(partial, nil, errors.New("no client"))
	want := LeaseTimings{Duration: 137 * time.Second, RenewDeadline: 107 * time.Second, RetryPeriod: 2 * time.Second}
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
