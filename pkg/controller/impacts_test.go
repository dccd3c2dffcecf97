package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

type countingLists struct{ n int }

func (c *countingLists) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

func (c *countingLists) List(context.Context, client.ObjectList, ...client.ListOption) error {
	c.n++
	return nil
}

// VMIs are listed only for a write that reboots a pool and is sent or
// waits; a write sent or starting to wait lists now, one still waiting
// reuses a count for at most impactTTL.
func TestImpactsListOnlyWhenARolloutIsPending(t *testing.T) {
	now := time.Unix(0, 0)
	r := &countingLists{}
	m := newImpacts(r, func() time.Time { return now })
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetKind("MachineConfig")
	u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
	mc := &engine.Decision{Asset: &catalog.Asset{Name: "mc", Disruption: catalog.DisruptionReboot}, Rendered: u}
	cm := &engine.Decision{Asset: &catalog.Asset{Name: "cm"}}
	rc := rendercontext.New(rendercontext.Facts{AssumeAllKinds: true})
	ctx := context.Background()

	for _, o := range []engine.Outcome{engine.Unchanged, engine.Throttled, engine.Failed} {
		if m.of(ctx, rc, mc, engine.Result{Outcome: o}, true) != "" || r.n != 0 {
			t.Fatalf("%s: no rollout pending, nothing read", o)
		}
	}
	if m.of(ctx, rc, cm, engine.Result{Outcome: engine.Applied}, true) != "" || r.n != 0 {
		t.Fatal("a write that reboots nothing reads no VMI")
	}
	if m.of(ctx, rc, mc, engine.Result{Outcome: engine.Staged}, true) == "" || r.n != 1 {
		t.Fatalf("a write starting to wait lists the VMIs (%d)", r.n)
	}
	m.of(ctx, rc, mc, engine.Result{Outcome: engine.Staged}, false)
	if r.n != 1 {
		t.Fatal("still waiting within the TTL: the count is reused")
	}
	now = now.Add(impactTTL)
	m.of(ctx, rc, mc, engine.Result{Outcome: engine.Staged}, false)
	m.of(ctx, rc, mc, engine.Result{Outcome: engine.Applied}, false)
	if r.n != 2 {
		t.Fatalf("after the TTL the VMIs are read again, and a write sent right after shares that count (%d)", r.n)
	}
	now = now.Add(impactFresh)
	m.of(ctx, rc, mc, engine.Result{Outcome: engine.Applied}, false)
	if r.n != 3 {
		t.Fatalf("a write sent takes a count at most %s old (%d)", impactFresh, r.n)
	}
}
