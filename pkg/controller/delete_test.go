package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// The controller's delete paths (a switch-off, a superseded object, a
// tombstone) each go through the gate on the HCO as the API server has it
// now, and classify the DELETE's answer in one place.

var monday = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const onSwitch = "platform.kubevirt.io/enable-thing"

// rig is a reconciler whose API server holds an HCO with the annotations
// fresh (the cache's copy has none: the fresh one decides), and answers a
// DELETE with deleteErr; deletes counts them.
type rig struct {
	r       *Reconciler
	intent  *freshIntent
	cached  *rendercontext.RenderContext
	deletes int
}

func newRig(t *testing.T, fresh map[string]string, deleteErr error) *rig {
	t.Helper()
	hco := &unstructured.Unstructured{}
	hco.SetGroupVersionKind(rendercontext.HCOGVK)
	hco.SetNamespace("ns")
	hco.SetName(rendercontext.HCOName)
	hco.SetAnnotations(fresh)
	g := &rig{}
	c := fake.NewClientBuilder().WithObjects(hco).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			g.deletes++
			return deleteErr
		},
	}).Build()
	cachedHCO := hco.DeepCopy()
	cachedHCO.SetAnnotations(nil)
	g.cached = rendercontext.New(rendercontext.Facts{Namespace: "ns", HCO: cachedHCO, Observed: rendercontext.Observed{Pools: []*unstructured.Unstructured{workerAtRest()}}})
	g.cached.AssumeAllKinds = true
	gt := gate.New(gate.Config{Throttle: throttle.Config{Burst: 1, Refill: time.Hour}, Resync: time.Hour, Now: func() time.Time { return monday },
		Catalog: &catalog.Catalog{Assets: []catalog.Asset{{Name: "thing", Component: "MachineConfig"}}}})
	g.r = &Reconciler{gate: gt, writer: c, syncer: &apply.Syncer{Client: c, Gate: gt}}
	g.intent = &freshIntent{reader: c, namespace: "ns", cached: g.cached}
	return g
}

// workerAtRest is the worker pool as MCO's node controller writes it at
// rest (pkg/controller/node/status.go calculateStatus).
func workerAtRest() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"machineConfigSelector": map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
		"configuration":         map[string]any{"name": "rendered-worker-1"}}}}
	u.SetGroupVersionKind(rendercontext.PoolGVK)
	u.SetName("worker")
	u.SetGeneration(2)
	_ = unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"type": "Updated", "status": "True"}, map[string]any{"type": "Updating", "status": "False"},
		map[string]any{"type": "Degraded", "status": "False"}}, "status", "conditions")
	_ = unstructured.SetNestedField(u.Object, int64(2), "status", "observedGeneration")
	_ = unstructured.SetNestedField(u.Object, "rendered-worker-1", "status", "configuration", "name")
	return u
}

// ours is a worker MachineConfig the autopilot created for asset "thing".
func ours(name string) *unstructured.Unstructured {
	mc := provablyOurs()
	mc.SetName(name)
	mc.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue, "machineconfiguration.openshift.io/role": "worker"})
	mc.SetAnnotations(map[string]string{annotations.Asset: "thing"})
	mc.SetUID("u1")
	mc.SetResourceVersion("7")
	return mc
}

func switchedOff() *engine.Decision {
	on := "true"
	a := &catalog.Asset{Name: "thing", Component: "MachineConfig", Install: catalog.InstallOptIn, Disruption: catalog.DisruptionReboot,
		Conditions: []catalog.Condition{{Type: catalog.CondAnnotation, Key: onSwitch, Value: &on}}}
	live := ours("50-kubevirt-thing")
	return &engine.Decision{Asset: a, Verdict: engine.VerdictInactive, IntentOff: true, Rendered: live.DeepCopy(), Live: live,
		Reason: "condition not met"}
}

func TestSwitchOffDeletePath(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfigs"}, "50-kubevirt-thing", errors.New("no delete"))
	for _, c := range []struct {
		name    string
		fresh   map[string]string
		err     error
		want    engine.Outcome
		deletes int
		says    string
	}{
		{"deleted", nil, nil, engine.Deleted, 1, "asset turned off"},
		{"window closed now", map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"}, nil, engine.Staged, 0, "window"},
		{"an exclusion entry not understood", map[string]string{annotations.DisabledResources: "machineconfigs/50-kubevirt-thing"}, nil, engine.Invalid, 0, annotations.DisabledResources},
		{"excluded now", map[string]string{annotations.DisabledResources: "MachineConfig/50-kubevirt-thing"}, nil, engine.Inactive, 0, "kept"},
		{"turned back on", map[string]string{onSwitch: "true"}, nil, engine.Inactive, 0, "no longer turns it off"},
		{"report-only now", map[string]string{annotations.Autopilot: "report-only"}, nil, engine.Inactive, 0, "kept"},
		{"refused", nil, forbidden, engine.Refused, 1, "50-kubevirt-thing"},
		{"failed", nil, apierrors.NewServiceUnavailable("etcd"), engine.Failed, 1, "50-kubevirt-thing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.fresh, c.err)
			res := g.r.inactive(context.Background(), switchedOff(), g.cached, g.intent)
			if res.Outcome != c.want || g.deletes != c.deletes || !strings.Contains(res.Reason, c.says) {
				t.Fatalf("%s (%s), %d DELETE(s); want %s saying %q, %d", res.Outcome, res.Reason, g.deletes, c.want, c.says, c.deletes)
			}
			if c.want == engine.Invalid && engine.InvalidAnnotation(&engine.Decision{}, res) != annotations.DisabledResources {
				t.Fatalf("the hold does not name the annotation: %+v", res)
			}
		})
	}
}

func replacing() *engine.Decision {
	d := switchedOff()
	d.Verdict, d.IntentOff = engine.VerdictIncluded, false
	d.Replaces = ours("50-kubevirt-old")
	return d
}

func TestSupersededDeletePath(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "machineconfigs"}, "50-kubevirt-old", errors.New("no delete"))
	for _, c := range []struct {
		name    string
		fresh   map[string]string
		write   engine.Outcome // the replacement's own write
		err     error
		want    engine.Outcome
		deletes int
		says    string
	}{
		{"in place already: deleted alone", nil, engine.Unchanged, nil, engine.Applied, 1, "which it replaces"},
		{"in place, window closed now", map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"}, engine.Unchanged, nil, engine.Staged, 0, "which it replaces, waits"},
		{"in place, an exclusion entry not understood", map[string]string{annotations.DisabledResources: "machineconfigs/x"}, engine.Unchanged, nil, engine.Invalid, 0, annotations.DisabledResources},
		{"in place, refused", nil, engine.Unchanged, forbidden, engine.Refused, 1, "50-kubevirt-old"},
		{"written with it", nil, engine.Applied, nil, engine.Applied, 1, "which it replaces"},
		{"written with it, window closed now: its disruption went with the write", map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"}, engine.Applied, nil, engine.Applied, 1, "which it replaces"},
		{"written with it, excluded now: kept", map[string]string{annotations.DisabledResources: "MachineConfig/50-kubevirt-old"}, engine.Applied, nil, engine.Applied, 0, "which it replaces, is kept"},
		{"in place, excluded now: kept", map[string]string{annotations.DisabledResources: "MachineConfig/50-kubevirt-old"}, engine.Unchanged, nil, engine.Unchanged, 0, "which it replaces, is kept"},
		{"written with it, the delete fails twice", nil, engine.Applied, apierrors.NewServiceUnavailable("etcd"), engine.Applied, 2, "tried again on its own"},
		{"its write held: waits with it", nil, engine.Staged, nil, engine.Staged, 0, ""},
		{"its write failed: waits with it", nil, engine.Failed, nil, engine.Failed, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.fresh, c.err)
			res := g.r.replaced(context.Background(), replacing(), engine.Result{Outcome: c.write}, g.intent)
			if res.Outcome != c.want || g.deletes != c.deletes || !strings.Contains(res.Reason, c.says) {
				t.Fatalf("%s (%s), %d DELETE(s); want %s saying %q, %d", res.Outcome, res.Reason, g.deletes, c.want, c.says, c.deletes)
			}
		})
	}
}

// A tombstone's deletion passes the same gate: its carrier's write held,
// an exclusion entry not understood, a window closed on the HCO as just
// re-read, each holds it; an exclusion keeps it (deletion intent);
// nothing holding, it goes.
func TestTombstoneHoldPath(t *testing.T) {
	for _, c := range []struct {
		name  string
		fresh map[string]string
		waits string
		check string // the gate's check that holds it, "" none
		says  string
	}{
		{"nothing holds", nil, "", "", ""},
		{"its carrier's write is held", nil, "its settings are in asset x's object now, and that write is Staged", "dependency", "asset x"},
		{"an exclusion entry not understood", map[string]string{annotations.DisabledResources: "machineconfigs/50-swap-enable"}, "", "input", annotations.DisabledResources},
		{"excluded now: kept", map[string]string{annotations.DisabledResources: "MachineConfig/50-swap-enable"}, "", gate.Intent, "listed in HCO"},
		{"window closed now", map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"}, "", "window", "window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.fresh, nil)
			p := &pass{r: g.r, ctx: context.Background(), intent: g.intent}
			var waits func(*unstructured.Unstructured) (string, bool)
			if c.waits != "" {
				waits = func(*unstructured.Unstructured) (string, bool) { return c.waits, true }
			}
			dis, v, err := p.judgeRemoval(waits)(ours("50-swap-enable"))
			if err != nil || v.Go != (c.check == "") || v.Check != c.check || !strings.Contains(v.Reason, c.says) || !dis.Reboot {
				t.Fatalf("go %v held by %q (%s), reboot %v, err %v; want held by %q saying %q", v.Go, v.Check, v.Reason, dis.Reboot, err, c.check, c.says)
			}
			if v.Kept() != (c.check == gate.Intent) {
				t.Fatalf("kept %v", v.Kept())
			}
		})
	}
}

// Held on the cached HCO, a deletion reads nothing more: the fresh read
// is for a deletion that would go.
func TestRemovalHeldOnTheCacheReadsNoHCO(t *testing.T) {
	g := newRig(t, nil, nil)
	g.cached = g.cached.WithHCO(func() *unstructured.Unstructured {
		h := g.cached.HCOObject().DeepCopy()
		h.SetAnnotations(map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"})
		return h
	}())
	g.intent.cached, g.intent.reader = g.cached, failingGet{}
	p := &pass{r: g.r, ctx: context.Background(), intent: g.intent}
	if _, v, err := p.judgeRemoval(nil)(ours("50-swap-enable")); err != nil || v.Go || v.Check != "window" {
		t.Fatalf("go %v by %q, err %v", v.Go, v.Check, err)
	}
	if res := g.r.inactive(context.Background(), switchedOff(), g.cached, g.intent); res.Outcome != engine.Staged {
		t.Fatalf("switch-off: %s (%s)", res.Outcome, res.Reason)
	}
}

// failingGet fails every read: a test that reaches it read the HCO.
type failingGet struct{ client.Reader }

func (failingGet) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("the HCO was read")
}

// Every protection of the object keeps it on each controller delete path
// (a switch-off, a superseded object judged alone or riding with its
// replacement's write, a tombstone): no DELETE is sent.
func TestEveryControllerDeletePathKeepsAProtectedObject(t *testing.T) {
	now := metav1.Now()
	protections := map[string]func(*unstructured.Unstructured){
		"no label": func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		},
		"never applied by it": func(u *unstructured.Unstructured) { u.SetManagedFields(nil) },
		"unmanaged": func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Mode: annotations.ModeUnmanaged})
		},
		"mode not understood": func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{annotations.Mode: "unmanged"}) },
		"adopted":             func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{annotations.Adopted: "true"}) },
		"shared":              func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{annotations.Shared: "true"}) },
		"being deleted":       func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&now) },
	}
	for name, protect := range protections {
		for _, path := range []string{"switch-off", "superseded alone", "superseded with its write", "tombstone"} {
			g := newRig(t, nil, nil)
			switch path {
			case "switch-off":
				d := switchedOff()
				protect(d.Live)
				if res := g.r.inactive(context.Background(), d, g.cached, g.intent); res.Outcome != engine.Inactive || !strings.Contains(res.Reason, "kept") {
					t.Errorf("%s, %s: %s (%s)", name, path, res.Outcome, res.Reason)
				}
			case "superseded alone", "superseded with its write":
				d := replacing()
				protect(d.Replaces)
				write := engine.Unchanged
				if path == "superseded with its write" {
					write = engine.Applied
				}
				if res := g.r.replaced(context.Background(), d, engine.Result{Outcome: write}, g.intent); !strings.Contains(res.Reason, "is kept") {
					t.Errorf("%s, %s: %s (%s)", name, path, res.Outcome, res.Reason)
				}
			case "tombstone":
				live := ours("50-swap-enable")
				protect(live)
				p := &pass{r: g.r, ctx: context.Background(), intent: g.intent}
				if _, v, err := p.judgeRemoval(nil)(live); err != nil || !v.Kept() {
					t.Errorf("%s, %s: %+v %v", name, path, v, err)
				}
			}
			if g.deletes != 0 {
				t.Errorf("%s, %s: %d DELETE(s) sent", name, path, g.deletes)
			}
		}
	}
}
