package apply_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// noFacts is a cluster without a disruption window or pools: the gate
// holds nothing but the write budget.
var noFacts = rendercontext.New(rendercontext.Facts{})

// server stands in for the API server's apply: it records each call and
// answers with what the test says the object becomes.
type server struct {
	calls  []string // "apply" or "dry-run"
	answer func(dryRun bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

func (s *server) client() client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := &client.ApplyOptions{}
			o.ApplyOptions(opts)
			dry := len(o.DryRun) > 0
			u := obj.(interface{ UnstructuredContent() map[string]any })
			sent := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(u.UnstructuredContent())}
			if dry {
				s.calls = append(s.calls, "dry-run")
			} else {
				s.calls = append(s.calls, "apply")
			}
			out, err := s.answer(dry, sent)
			if err != nil {
				return err
			}
			obj.(interface{ SetUnstructuredContent(map[string]any) }).SetUnstructuredContent(out.Object)
			return nil
		},
	}).Build()
}

func decision(live *unstructured.Unstructured, value string) *engine.Decision {
	desired := &unstructured.Unstructured{}
	desired.SetAPIVersion("v1")
	desired.SetKind("ConfigMap")
	desired.SetNamespace("ns")
	desired.SetName("cm")
	desired.Object["data"] = map[string]any{"k": value}
	return &engine.Decision{Asset: &catalog.Asset{Name: "a"}, Verdict: engine.VerdictIncluded, Desired: desired, Live: live}
}

func liveCM(value, rv string, owners ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := decision(nil, value).Desired.DeepCopy()
	u.SetResourceVersion(rv)
	u.SetUID("uid-1")
	u.SetManagedFields(owners)
	return u
}

var kubectlOwnsK = metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
	FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}}}`)}

func TestSyncCreateTakesNoToken(t *testing.T) {
	srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) { return sent, nil }}
	th := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}})
	s := &apply.Syncer{Client: srv.client(), Gate: th}
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Applied || res.Reason != "created" {
		t.Fatalf("%+v", res)
	}
	if st := th.ThrottleState("ConfigMap/ns/cm"); st.Tokens != 1 {
		t.Fatalf("creating is not a correction: tokens %v", st.Tokens)
	}
	if len(srv.calls) != 1 || srv.calls[0] != "apply" {
		t.Fatalf("calls %v", srv.calls)
	}
	// Someone deleted it: re-creating is a correction (a deletion loop is a
	// fight, and each MachineConfig re-creation a reboot).
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Applied {
		t.Fatalf("%+v", res)
	}
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Throttled || len(srv.calls) != 2 {
		t.Fatalf("a deletion loop is throttled with nothing sent: %+v, calls %v", res, srv.calls)
	}
	// Removed by the autopilot itself (switch off): creating again is free.
	s.Forget("ConfigMap/ns/cm")
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Applied {
		t.Fatalf("%+v", res)
	}
}

func TestSyncCertainVerdictIsOneRequest(t *testing.T) {
	srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) { return sent, nil }}
	s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}})}
	res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v"))
	if res.Outcome != engine.Applied || len(res.Opponents) != 1 || res.Opponents[0] != "kubectl-edit" {
		t.Fatalf("%+v", res)
	}
	if len(srv.calls) != 1 || srv.calls[0] != "apply" {
		t.Fatalf("another manager changed our field: apply without a dry-run, got %v", srv.calls)
	}

	// Budget spent: the next fight round sends nothing at all.
	srv.calls = nil
	res = s.Sync(context.Background(), noFacts, decision(liveCM("edited", "3", kubectlOwnsK), "v"))
	if res.Outcome != engine.Throttled || res.RetryAfter <= 0 || len(srv.calls) != 0 {
		t.Fatalf("throttled: %+v, calls %v", res, srv.calls)
	}
	if again := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "4", kubectlOwnsK), "v")); again.Reason != res.Reason {
		t.Fatalf("the reason must not change within an episode (one event): %q vs %q", res.Reason, again.Reason)
	}
}

func TestSyncDryRunVerdictIsRemembered(t *testing.T) {
	live := liveCM("normalized", "7")
	// The server normalizes the value: applying changes nothing.
	srv := &server{answer: func(_ bool, _ *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return live.DeepCopy(), nil
	}}
	s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{Throttle: throttle.Config{}})}
	for i := 0; i < 3; i++ {
		if res := s.Sync(context.Background(), noFacts, decision(live.DeepCopy(), "v")); res.Outcome != engine.Unchanged {
			t.Fatalf("pass %d: %+v", i, res)
		}
	}
	if len(srv.calls) != 1 || srv.calls[0] != "dry-run" {
		t.Fatalf("one dry-run per live resourceVersion and desired state, got %v", srv.calls)
	}
	// A new resourceVersion asks again.
	live.SetResourceVersion("8")
	s.Sync(context.Background(), noFacts, decision(live.DeepCopy(), "v"))
	if len(srv.calls) != 2 {
		t.Fatalf("calls %v", srv.calls)
	}
}

func TestSyncMissingNamespaceAndFailure(t *testing.T) {
	srv := &server{answer: func(bool, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns")
	}}
	s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{Throttle: throttle.Config{}})}
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.MissingDependency || res.RetryAfter != apply.NamespaceRetry {
		t.Fatalf("a missing namespace is a missing dependency: %+v", res)
	}
	srv.answer = func(bool, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return nil, errors.New("admission webhook denied")
	}
	res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v"))
	if res.Outcome != engine.Failed || res.Err == nil {
		t.Fatalf("%+v", res)
	}
}

// A write the API server refuses on its merits (a verb the role lost,
// admission, validation) is Refused with the server's reason: it spends no
// budget, names nobody as an opponent, and however often it is refused the
// next write that is allowed goes at once. A failure that is not a refusal
// (the server unavailable) stays Failed.
func TestSyncRefusalIsNoFight(t *testing.T) {
	refusals := []error{
		apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("the role lost patch")),
		apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", nil),
		apierrors.NewBadRequest("admission webhook \"x\" denied the request"),
	}
	for _, refusal := range refusals {
		refuse := true
		srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			if refuse {
				return nil, refusal
			}
			out := sent.DeepCopy()
			out.SetResourceVersion("99")
			return out, nil
		}}
		g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}})
		s := &apply.Syncer{Client: srv.client(), Gate: g}
		for i := 0; i < 5; i++ {
			res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v"))
			if res.Outcome != engine.Refused || len(res.Opponents) != 0 || !strings.Contains(res.Reason, "ConfigMap/ns/cm") || !strings.Contains(res.Reason, refusal.Error()) {
				t.Fatalf("%v, refusal %d: %+v", refusal, i, res)
			}
		}
		if st := g.ThrottleState("ConfigMap/ns/cm"); st.Tokens < 0.99 || st.Throttled {
			t.Fatalf("%v: refusals spent the budget: %+v", refusal, st)
		}
		refuse = false
		if res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v")); res.Outcome != engine.Applied {
			t.Fatalf("%v: the first allowed write after refusals: %+v", refusal, res)
		}
	}
	srv := &server{answer: func(bool, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return nil, apierrors.NewServiceUnavailable("etcd")
	}}
	s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{})}
	if res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v")); res.Outcome != engine.Failed {
		t.Fatalf("an unavailable server is a failure, not a refusal: %+v", res)
	}
}

// A write that failed (a webhook that cannot be called, a conflict, an
// overloaded server) changed nothing either: it spends no budget, so a
// webhook outage is never reported as someone fighting the autopilot.
func TestSyncFailureSpendsNoBudget(t *testing.T) {
	for _, failure := range []error{
		apierrors.NewInternalError(errors.New(`failed calling webhook "x": context deadline exceeded`)),
		apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("the object has been modified")),
		apierrors.NewServiceUnavailable("etcd"),
		apierrors.NewTooManyRequests("slow down", 1),
	} {
		srv := &server{answer: func(bool, *unstructured.Unstructured) (*unstructured.Unstructured, error) { return nil, failure }}
		g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}})
		s := &apply.Syncer{Client: srv.client(), Gate: g}
		for i := 0; i < 5; i++ {
			res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "2", kubectlOwnsK), "v"))
			if res.Outcome != engine.Failed || !strings.Contains(res.Reason, "ConfigMap/ns/cm") {
				t.Fatalf("%v, try %d: %+v", failure, i, res)
			}
		}
		if st := g.ThrottleState("ConfigMap/ns/cm"); st.Tokens < 0.99 || st.Throttled {
			t.Fatalf("%v: failed writes spent the budget: %+v", failure, st)
		}
	}
}

// The autopilot's own write, not yet in the cache (a reconcile that
// started before the watch delivered it), is neither sent again nor
// reported again, nor taken for someone deleting or changing it; once the
// lag is over the cache is the truth again.
func TestSyncTrustsItsOwnWriteWhileTheCacheLags(t *testing.T) {
	rv := 0
	srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		rv++
		out := sent.DeepCopy()
		out.SetResourceVersion(fmt.Sprint(rv))
		return out, nil
	}}
	now := time.Unix(0, 0)
	g := gate.New(gate.Config{Throttle: throttle.Config{Burst: 3, Refill: time.Hour}})
	s := &apply.Syncer{Client: srv.client(), Gate: g, Now: func() time.Time { return now }}
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Applied {
		t.Fatalf("%+v", res)
	}
	res := s.Sync(context.Background(), noFacts, decision(nil, "v")) // the cache still says absent
	if res.Outcome != engine.Unchanged || res.RetryAfter != apply.CacheLag || len(srv.calls) != 1 {
		t.Fatalf("its own create, not yet in the cache: %+v, calls %v", res, srv.calls)
	}
	if res.Object == nil || res.Object.GetResourceVersion() != "1" {
		t.Fatalf("the server's copy stands for the object while the cache lags (the HCO in effect): %+v", res.Object)
	}
	if st := g.ThrottleState("ConfigMap/ns/cm"); st.Tokens != 3 {
		t.Fatalf("no budget spent on its own write: %+v", st)
	}
	// The cache shows it: the cache is the truth (a correction of an edit
	// made since goes).
	if res := s.Sync(context.Background(), noFacts, decision(liveCM("edited", "1", kubectlOwnsK), "v")); res.Outcome != engine.Applied {
		t.Fatalf("an edit after its own write: %+v", res)
	}
	// A deletion seen after the lag is a deletion.
	now = now.Add(apply.CacheLag)
	if res := s.Sync(context.Background(), noFacts, decision(nil, "v")); res.Outcome != engine.Applied || len(srv.calls) != 3 {
		t.Fatalf("absent after the lag: %+v, calls %v", res, srv.calls)
	}
}

// An earlier scheme's settle stamp (facts alone) is no drift on its own:
// an upgrade writes nothing for it. With a real change, the write carries
// the new stamp, so no object keeps the old one.
func TestOldSchemeStampAloneIsNoDrift(t *testing.T) {
	srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		out := sent.DeepCopy()
		out.SetResourceVersion("9")
		return out, nil
	}}
	s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{})}
	stamped := func(u *unstructured.Unstructured, stamp string) *unstructured.Unstructured {
		u.SetAnnotations(map[string]string{annotations.Facts: stamp})
		return u
	}
	owned := metav1.ManagedFieldsEntry{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}},"f:metadata":{"f:annotations":{"f:platform.kubevirt.io/facts":{}}}}`)}
	newStamp := settle.Print{Facts: settle.Scheme + "f", Object: "o"}.Stamp()
	d := decision(stamped(liveCM("v", "2", owned), "5ff21140a942f0f1"), "v")
	stamped(d.Desired, newStamp)
	if res := s.Sync(context.Background(), noFacts, d); res.Outcome != engine.Unchanged || len(srv.calls) != 0 {
		t.Fatalf("the old stamp alone: %+v, calls %v", res, srv.calls)
	}
	d = decision(stamped(liveCM("edited", "3", owned), "5ff21140a942f0f1"), "v")
	stamped(d.Desired, newStamp)
	res := s.Sync(context.Background(), noFacts, d)
	if res.Outcome != engine.Applied || res.Object.GetAnnotations()[annotations.Facts] != newStamp {
		t.Fatalf("a real change carries the new stamp: %+v", res)
	}
	d = decision(stamped(liveCM("v", "4", owned), settle.Scheme+"g/o"), "v")
	stamped(d.Desired, newStamp)
	if res := s.Sync(context.Background(), noFacts, d); res.Outcome == engine.Unchanged && len(res.Drift) == 0 && len(srv.calls) == 1 {
		t.Fatalf("a stamp of this scheme that differs is drift: %+v", res)
	}
}

// A write that goes with a deletion is judged on the HCO as the API server
// has it now, read only when the cached verdict lets it go: a held,
// report-only or converged pair costs no request; a window added a moment
// ago holds it; an HCO that cannot be read sends nothing.
func TestSyncOnReadsTheHCOOnlyForAWriteThatWouldGo(t *testing.T) {
	mc := func() *engine.Decision {
		desired := &unstructured.Unstructured{}
		desired.SetAPIVersion("machineconfiguration.openshift.io/v1")
		desired.SetKind("MachineConfig")
		desired.SetName("50-kubevirt-thing")
		desired.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		return &engine.Decision{Asset: &catalog.Asset{Name: "a", Disruption: catalog.DisruptionReboot}, Verdict: engine.VerdictIncluded,
			Desired: desired, Rendered: desired, Pools: []string{"worker"}}
	}
	window := func(w string) *rendercontext.RenderContext {
		hco := &unstructured.Unstructured{Object: map[string]any{}}
		if w != "" {
			hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: w})
		}
		return rendercontext.New(rendercontext.Facts{HCO: hco})
	}
	for _, c := range []struct {
		name        string
		cached      string // the cache's window
		fresh       string // the API server's
		freshErr    error
		reportOnly  bool
		want        engine.Outcome
		reads, sent int
	}{
		{"goes", "", "", nil, false, engine.Applied, 1, 1},
		{"a window added a moment ago", "", "Sat 02:00-06:00 UTC", nil, false, engine.Staged, 1, 0},
		{"held on the cache already", "Sat 02:00-06:00 UTC", "", nil, false, engine.Staged, 0, 0},
		{"report-only", "", "", nil, true, engine.Drifted, 0, 0},
		{"the HCO cannot be read", "", "", errors.New("etcd down"), false, engine.Failed, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := &server{answer: func(_ bool, sent *unstructured.Unstructured) (*unstructured.Unstructured, error) { return sent, nil }}
			s := &apply.Syncer{Client: srv.client(), Gate: gate.New(gate.Config{Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})}
			reads := 0
			fresh := func(context.Context) (*rendercontext.RenderContext, error) {
				reads++
				return window(c.fresh), c.freshErr
			}
			d := mc()
			d.ReportOnly = c.reportOnly
			res := s.SyncOn(context.Background(), window(c.cached), d, fresh)
			if res.Outcome != c.want || reads != c.reads || len(srv.calls) != c.sent {
				t.Fatalf("%s (%s), %d read(s), calls %v; want %s, %d read(s), %d sent", res.Outcome, res.Reason, reads, srv.calls, c.want, c.reads, c.sent)
			}
		})
	}
}
