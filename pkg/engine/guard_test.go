package engine_test

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
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// ours is an object the autopilot provably applied.
func ours() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName("obj")
	u.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
	u.SetAnnotations(map[string]string{annotations.Asset: "a"})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:platform.kubevirt.io/managed-by":{}}}}`)}})
	return u
}

// judged is a tombstone hold that asks a gate, as the controller's does,
// on rc.
func judged(rc *rendercontext.RenderContext) tombstone.Hold {
	g := gate.New(gate.Config{})
	return func(live *unstructured.Unstructured) (engine.Disruption, gate.Verdict, error) {
		w := gate.ForRemoval(rc, gate.Tombstone, "", live, false)
		return w.Disruption, g.Judge(rc, w), nil
	}
}

// Each protection refuses the deletion, on each path that deletes: an
// opt-in asset switched off, a superseded object, and the tombstone
// reaper, each judged by the gate (its deletion intent check).
func TestEveryDeletionPathHonoursEveryProtection(t *testing.T) {
	terminating := func() *rendercontext.RenderContext {
		rc := newContext(nil)
		hco := rc.HCOObject().DeepCopy()
		now := metav1.Now()
		hco.SetDeletionTimestamp(&now)
		return rc.WithHCO(hco)
	}
	protections := map[string]struct {
		mutate func(*unstructured.Unstructured)
		rc     func() *rendercontext.RenderContext
	}{
		"no label":     {mutate: func(u *unstructured.Unstructured) { u.SetLabels(nil) }},
		"copied label": {mutate: func(u *unstructured.Unstructured) { u.SetManagedFields(nil) }},
		"update only": {mutate: func(u *unstructured.Unstructured) {
			mf := u.GetManagedFields()
			mf[0].Operation = metav1.ManagedFieldsOperationUpdate
			u.SetManagedFields(mf)
		}},
		"unmanaged": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Mode: annotations.ModeUnmanaged})
		}},
		"unmanaged in another case": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Mode: "UnManaged "})
		}},
		"report-only": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Mode: "Report-Only"})
		}},
		"mode not understood": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Mode: "unmanged"})
		}},
		"adopted": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Asset: "a", annotations.Adopted: "true"})
		}},
		"adopted in another spelling": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Asset: "a", annotations.Adopted: "Yes"})
		}},
		"shared with a value not understood": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Asset: "a", annotations.Shared: "ture"})
		}},
		"shared": {mutate: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{annotations.Asset: "a", annotations.Shared: "true"})
		}},
		"a container (its deletion cascades)": {mutate: func(u *unstructured.Unstructured) {
			u.SetKind("Namespace")
			u.SetNamespace("")
		}},
		"root-excluded": {rc: func() *rendercontext.RenderContext {
			return newContext(map[string]string{annotations.DisabledResources: "ConfigMap/ns/obj"})
		}},
		"paused": {rc: func() *rendercontext.RenderContext {
			return newContext(map[string]string{annotations.Autopilot: "false"})
		}},
		"HCO terminating": {rc: terminating},
	}
	paths := []string{string(gate.SwitchOff), string(gate.Supersede), "tombstone"}
	for name, p := range protections {
		for _, path := range paths {
			live := ours()
			if p.mutate != nil {
				p.mutate(live)
			}
			rc := newContext(nil)
			if p.rc != nil {
				rc = p.rc()
			}
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(live.DeepCopy()).Build()
			stored := getObj(t, c, live)
			stored.SetManagedFields(live.GetManagedFields()) // as the API server would keep them
			if path == "tombstone" {
				r := &tombstone.Reaper{Cache: staticReader{stored}, Reader: staticReader{stored}, Writer: c, Watched: func(schema.GroupVersionKind) bool { return true }}
				res := r.Reap(context.Background(), []tombstone.Tombstone{{Path: "t.yaml", Object: live.DeepCopy()}}, judged(rc))
				if res[0].Status != tombstone.Skipped || res[0].Deleted || !strings.HasPrefix(res[0].Reason, "may not delete") {
					t.Errorf("%s/%s: %+v", name, path, res[0])
				}
			} else if v := gate.New(gate.Config{}).Judge(rc, gate.ForRemoval(rc, gate.Op(path), "a", stored, false)); !v.Kept() || v.Reason == "" {
				t.Errorf("%s/%s: %+v", name, path, v)
			}
			if getObj(t, c, live) == nil {
				t.Errorf("%s/%s: the object is gone", name, path)
			}
		}
	}

	// And with no protection in the way, every path deletes.
	for _, path := range paths {
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(ours()).Build()
		stored := getObj(t, c, ours())
		stored.SetManagedFields(ours().GetManagedFields())
		rc := newContext(nil)
		if path == "tombstone" {
			r := &tombstone.Reaper{Cache: staticReader{stored}, Reader: staticReader{stored}, Writer: c, Watched: func(schema.GroupVersionKind) bool { return true }}
			if res := r.Reap(context.Background(), []tombstone.Tombstone{{Path: "t.yaml", Object: ours()}}, judged(rc)); !res[0].Deleted {
				t.Fatalf("tombstone: %+v", res[0])
			}
		} else {
			if v := gate.New(gate.Config{}).Judge(rc, gate.ForRemoval(rc, gate.Op(path), "a", stored, false)); !v.Go {
				t.Fatalf("%s: %+v", path, v)
			}
			if err := apply.Delete(context.Background(), c, stored); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		if getObj(t, c, ours()) != nil {
			t.Fatalf("%s: not deleted", path)
		}
	}
}

// A tombstone never takes an object a person customized (an upgrade must
// not drop their patch or mask); a person's switch-off still removes it.
func TestTombstonesKeepCustomizedObjects(t *testing.T) {
	for _, k := range []string{annotations.Patch, annotations.IgnoreFields} {
		customized := ours()
		customized.SetAnnotations(map[string]string{k: "[]"})
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(customized.DeepCopy()).Build()
		stored := getObj(t, c, customized)
		stored.SetManagedFields(customized.GetManagedFields())
		r := &tombstone.Reaper{Cache: staticReader{stored}, Reader: staticReader{stored}, Writer: c, Watched: func(schema.GroupVersionKind) bool { return true }}
		rc := newContext(nil)
		res := r.Reap(context.Background(), []tombstone.Tombstone{{Path: "t.yaml", Object: ours()}}, judged(rc))
		if res[0].Status != tombstone.Skipped || !strings.Contains(res[0].Reason, k) || getObj(t, c, customized) == nil {
			t.Errorf("%s: tombstone result %+v", k, res[0])
		}
		if v := gate.New(gate.Config{}).Judge(rc, gate.ForRemoval(rc, gate.Supersede, "a", stored, false)); !v.Kept() {
			t.Errorf("%s: a superseded object a person customized is deleted: %+v", k, v)
		}
		if v := gate.New(gate.Config{}).Judge(rc, gate.ForRemoval(rc, gate.SwitchOff, "a", stored, false)); !v.Go {
			t.Errorf("%s: a person's switch-off is refused: %+v", k, v)
		}
	}
}

func TestMayDeleteRefusesAnObjectBeingDeleted(t *testing.T) {
	u := ours()
	now := metav1.NewTime(time.Now())
	u.SetDeletionTimestamp(&now)
	if ok, _ := (engine.Guard{}).MayDelete(u); ok {
		t.Fatal("an object already being deleted is left alone")
	}
}

// A live read that fails is never taken as "absent" or as a reason to
// delete: the inactive asset fails instead.
func TestInactiveAssetWithUnreadableLiveFails(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-pci-passthrough": "false"})
	a, _ := cat.Get("pci-passthrough")
	d := ev.Evaluate(context.Background(), a, rc, failingReader{})
	if d.Verdict != engine.VerdictFailed || engine.RemovalCandidate(&d, rc) != nil {
		t.Fatalf("got %s %q", d.Verdict, d.Reason)
	}
}

type failingReader struct{}

func (failingReader) Live(context.Context, schema.GroupVersionKind, string, string) (*unstructured.Unstructured, error) {
	return nil, errors.New("cache not synced")
}

type staticReader struct{ u *unstructured.Unstructured }

func (s staticReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if key.Name != s.u.GetName() || key.Namespace != s.u.GetNamespace() {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	s.u.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (s staticReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func getObj(t *testing.T, c client.Client, ref *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind())
	err := c.Get(context.Background(), client.ObjectKeyFromObject(ref), u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A tombstone deletion that must wait (a closed disruption window, a busy
// pool) is left for a later pass: nothing deleted, the reason reported;
// when the wait ends it goes.
func TestTombstoneDeletionWaitsForItsHold(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(ours()).Build()
	stored := getObj(t, c, ours())
	stored.SetManagedFields(ours().GetManagedFields())
	r := &tombstone.Reaper{Cache: staticReader{stored}, Reader: staticReader{stored}, Writer: c, Watched: func(schema.GroupVersionKind) bool { return true }}
	ts := []tombstone.Tombstone{{Path: "t.yaml", Object: ours()}}
	held := true
	hold := func(*unstructured.Unstructured) (engine.Disruption, gate.Verdict, error) {
		if held {
			return engine.Disruption{Reboot: true, Pool: "worker"}, gate.Verdict{Outcome: engine.Staged, Reason: "the disruption window is closed", Check: "window"}, nil
		}
		return engine.Disruption{Reboot: true, Pool: "worker"}, gate.Verdict{Go: true}, nil
	}
	res := r.Reap(context.Background(), ts, hold)
	if res[0].Deleted || res[0].Status != tombstone.Skipped || !strings.Contains(res[0].Reason, "window is closed") || getObj(t, c, ours()) == nil {
		t.Fatalf("held: %+v", res[0])
	}
	held = false
	if res := r.Reap(context.Background(), ts, hold); !res[0].Deleted {
		t.Fatalf("released: %+v", res[0])
	}
}

// The shipped autopilot's edit-war mark (or a person's pause with it)
// keeps an object on every deletion path, a person's switch-off included.
func TestMayDeleteKeepsAReconcilePausedObject(t *testing.T) {
	u := ours()
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[annotations.ShippedPaused] = "true"
	u.SetAnnotations(ann)
	rc := newContext(nil)
	for _, op := range []gate.Op{gate.SwitchOff, gate.Tombstone, gate.Supersede} {
		if v := gate.New(gate.Config{}).Judge(rc, gate.ForRemoval(rc, op, "a", u, false)); !v.Kept() {
			t.Errorf("%s of a reconcile-paused object: %+v", op, v)
		}
	}
}
