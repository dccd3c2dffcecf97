package fleetstatus

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
)

// Written when a state, a compliance or the version changes, never for a
// reason alone, and not again after a restart that finds it current.
func TestWriteOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	st := func(psi features.State, reason string) []features.Status {
		return []features.Status{{Name: "psi", State: psi, Reason: reason}, {Name: "numa", State: features.Off}}
	}
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1"}
	for i, step := range []struct {
		statuses []features.Status
		want     bool
	}{
		{st(features.Active, ""), true},
		{st(features.Active, ""), false},
		{st(features.Active, "a new reason"), false},
		{st(features.Drifted, "drifted in /spec"), true},
		{st(features.Degraded, "failed"), true},
	} {
		changed, err := w.Write(ctx, step.statuses)
		if err != nil || changed != step.want {
			t.Fatalf("step %d: changed=%v err=%v, want %v", i, changed, err, step.want)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: Name}, cm); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": "v1", "attention": "psi", "healthy": "false", "psi.state": "degraded", "psi.reason": "failed", "psi.compliance": Unknown,
		"numa.state": "off", "numa.reason": "", "numa.compliance": NotApplicable}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
		}
	}
	restarted := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1"}
	if changed, err := restarted.Write(ctx, st(features.Degraded, "failed")); changed || err != nil {
		t.Fatalf("a restart rewrote an unchanged status: %v %v", changed, err)
	}
	upgraded := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v2"}
	if changed, _ := upgraded.Write(ctx, st(features.Degraded, "failed")); !changed {
		t.Fatal("a new version is not written")
	}
}
