package fleetstatus

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
		changed, _, err := w.Write(ctx, step.statuses)
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
	if changed, _, err := restarted.Write(ctx, st(features.Degraded, "failed")); changed || err != nil {
		t.Fatalf("a restart rewrote an unchanged status: %v %v", changed, err)
	}
	upgraded := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v2"}
	if changed, _, _ := upgraded.Write(ctx, st(features.Degraded, "failed")); !changed {
		t.Fatal("a new version is not written")
	}
}

// The ConfigMap in the cluster is the truth: another writer's change of a
// state, or its deletion, is undone at the next write; a key another
// writer adds is theirs and no reason to write; idle drops the features
// and says why; a cache that has not caught up with the autopilot's own
// write does not make it write again, for at most CacheLag.
func TestWriteFollowsTheCluster(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	now := time.Unix(0, 0)
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1", Now: func() time.Time { return now }}
	st := []features.Status{{Name: "psi", State: features.Active}}
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("first write: %v %v", changed, err)
	}
	get := func() *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: Name}, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	cm := get()
	cm.Data["psi.compliance"] = NotApplicable // an RHACM policy switched to enforce
	cm.Data["team"] = "ours"
	if err := c.Update(ctx, cm, client.FieldOwner("policy-controller")); err != nil {
		t.Fatal(err)
	}
	if changed, _, _ := w.Write(ctx, st); !changed || get().Data["psi.compliance"] != Compliant {
		t.Fatalf("another writer's change is not undone: %v %v", changed, get().Data)
	}
	if get().Data["team"] != "ours" {
		t.Fatal("another writer's key was removed")
	}
	if changed, _, _ := w.Write(ctx, st); changed {
		t.Fatal("another writer's own key is a reason to write")
	}
	if err := c.Delete(ctx, get()); err != nil {
		t.Fatal(err)
	}
	if changed, _, _ := w.Write(ctx, st); !changed {
		t.Fatal("a deleted status is not restored")
	}
	if changed, _, _ := w.WriteIdle(ctx, "hco_absent"); !changed {
		t.Fatal("idle not written")
	}
	d := get().Data
	if d[KeyAutopilot] != Idle || d[KeyIdleReason] != "hco_absent" || d[KeyHealthy] != "false" || d["psi.state"] != "" {
		t.Fatalf("idle: %v", d)
	}
	if changed, _, _ := w.Write(ctx, st); !changed || get().Data[KeyAutopilot] != Active || get().Data["psi.state"] != "active" {
		t.Fatalf("active again: %v", get().Data)
	}

	// A cache behind the write: the write is trusted within CacheLag.
	lag := &lagging{Reader: c}
	lw := &Writer{Reader: lag, Client: c, Namespace: "ns2", Version: "v1", Now: func() time.Time { return now }}
	if changed, _, _ := lw.Write(ctx, st); !changed {
		t.Fatal("first write")
	}
	lag.absent = true
	if changed, _, _ := lw.Write(ctx, st); changed {
		t.Fatal("a cache behind the autopilot's own write made it write again")
	}
	now = now.Add(CacheLag)
	if changed, _, _ := lw.Write(ctx, st); !changed {
		t.Fatal("after the cache's lag, absent is absent: restored")
	}
}

// lagging reads through Reader, or says the object is absent.
type lagging struct {
	client.Reader
	absent bool
}

func (l *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if l.absent {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

// An idle reason that changes (the HCO being deleted, then gone) is a
// change of state: written.
func TestIdleReasonChangeIsWritten(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1"}
	if changed, _, _ := w.WriteIdle(ctx, "hco_terminating"); !changed {
		t.Fatal("idle not written")
	}
	if changed, _, _ := w.WriteIdle(ctx, "hco_absent"); !changed {
		t.Fatal("a new idle reason is not written")
	}
	if changed, _, _ := w.WriteIdle(ctx, "hco_absent"); changed {
		t.Fatal("the same idle reason written again")
	}
}

// Undoing another writer's change takes a token: a writer that keeps
// changing the ConfigMap gets a paused autopilot, not a write loop. A
// first write, and a change of the features' state, take none.
func TestUndoingAnotherWriterIsBudgeted(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1", Budget: tokens(1)}
	st := []features.Status{{Name: "psi", State: features.Active}}
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("first write: %v %v", changed, err)
	}
	edit := func() {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: Name}, cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["psi.compliance"] = "Changed"
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	edit()
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("the first undo: %v %v", changed, err)
	}
	// A change of state is no undo: it takes no token.
	if changed, _, err := w.Write(ctx, []features.Status{{Name: "psi", State: features.Degraded}}); !changed || err != nil {
		t.Fatalf("a change of state: %v %v", changed, err)
	}
	edit()
	var paused *PausedError
	if changed, _, err := w.Write(ctx, []features.Status{{Name: "psi", State: features.Degraded}}); changed || !errors.As(err, &paused) || paused.Wait != time.Minute {
		t.Fatalf("budget spent: %v %v", changed, err)
	}
}

// A writer that keeps deleting the ConfigMap is a fight too: each
// re-creation takes a token, and with none left nothing is written.
func TestRecreatingIsBudgeted(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1", Budget: tokens(1)}
	st := []features.Status{{Name: "psi", State: features.Active}}
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("first write: %v %v", changed, err)
	}
	del := func() {
		// Seen written first (the cache caught up), then deleted.
		if changed, _, err := w.Write(ctx, st); changed || err != nil {
			t.Fatalf("steady: %v %v", changed, err)
		}
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = "ns", Name
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	del()
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("the first re-creation: %v %v", changed, err)
	}
	del()
	var paused *PausedError
	if changed, _, err := w.Write(ctx, st); changed || !errors.As(err, &paused) {
		t.Fatalf("a deletion loop is budgeted: %v %v", changed, err)
	}
}

// An undo the API server refuses (an admission policy, a lost verb)
// changed nothing: its token is given back, so refusals are never spent
// as a fight, and the next undo, once allowed, goes.
func TestRefusedUndoSpendsNoBudget(t *testing.T) {
	ctx := context.Background()
	refuse := false
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if refuse {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, Name, errors.New("denied by policy"))
			}
			return c.Apply(ctx, obj, opts...)
		}}).Build()
	budget, refund := refundable(1)
	w := &Writer{Reader: c, Client: c, Namespace: "ns", Version: "v1", Budget: budget, Refund: refund}
	st := []features.Status{{Name: "psi", State: features.Active}}
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("first write: %v %v", changed, err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: Name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["psi.compliance"] = "Changed"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	refuse = true
	for i := 0; i < 3; i++ {
		var paused *PausedError
		if _, _, err := w.Write(ctx, st); err == nil || errors.As(err, &paused) || !apierrors.IsForbidden(errors.Unwrap(err)) {
			t.Fatalf("refusal %d: %v", i, err)
		}
	}
	refuse = false
	if changed, _, err := w.Write(ctx, st); !changed || err != nil {
		t.Fatalf("refusals spent the budget: %v %v", changed, err)
	}
}

// tokens is a write budget of n tokens that never refill (a minute's wait
// once spent).
func tokens(n int) func(string) (bool, time.Duration) {
	budget, _ := refundable(n)
	return budget
}

// refundable is tokens with the refund that gives one back.
func refundable(n int) (func(string) (bool, time.Duration), func(string)) {
	return func(string) (bool, time.Duration) {
			if n == 0 {
				return false, time.Minute
			}
			n--
			return true, 0
		}, func(string) {
			n++
		}
}
