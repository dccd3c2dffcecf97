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
// waits; once per pool per reconcile; afresh when a write of the pool was
// sent or starts waiting; a count reused while writes keep waiting, for at
// most impactTTL.
func TestImpactsListOnlyWhenARolloutIsPending(t *testing.T) {
	now := time.Unix(0, 0)
	r := &countingLists{}
	m := newImpacts(r, func() time.Time { return now })
	mcOf := func(name string) *engine.Decision {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetKind("MachineConfig")
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		return &engine.Decision{Asset: &catalog.Asset{Name: name, Disruption: catalog.DisruptionReboot}, Rendered: u}
	}
	rc := rendercontext.New(rendercontext.Facts{AssumeAllKinds: true})
	ctx := context.Background()
	write := func(d *engine.Decision, o engine.Outcome, fresh bool) rollingWrite {
		return rollingWrite{d: d, res: engine.Result{Outcome: o}, rc: rc, fresh: fresh}
	}

	for _, o := range []engine.Outcome{engine.Unchanged, engine.Throttled, engine.Failed} {
		if needsImpact(mcOf("a"), engine.Result{Outcome: o}) {
			t.Fatalf("%s: no rollout pending", o)
		}
	}
	if needsImpact(&engine.Decision{Asset: &catalog.Asset{Name: "cm"}}, engine.Result{Outcome: engine.Applied}) {
		t.Fatal("a write that reboots nothing needs no VM count")
	}
	batch := []rollingWrite{write(mcOf("a"), engine.Applied, true), write(mcOf("b"), engine.Applied, true)}
	m.annotate(ctx, batch)
	if r.n != 1 || batch[0].res.Impact == "" || batch[1].res.Impact != batch[0].res.Impact {
		t.Fatalf("two writes of one pool share one LIST (%d): %+v", r.n, batch)
	}
	m.annotate(ctx, []rollingWrite{write(mcOf("a"), engine.Staged, false)})
	if r.n != 1 {
		t.Fatal("still waiting within the TTL: the count is reused")
	}
	m.annotate(ctx, []rollingWrite{write(mcOf("a"), engine.Staged, true)})
	if r.n != 2 {
		t.Fatal("a write that starts waiting is counted afresh")
	}
	now = now.Add(impactTTL)
	m.annotate(ctx, []rollingWrite{write(mcOf("a"), engine.Staged, false)})
	if r.n != 3 {
		t.Fatalf("after the TTL the VMIs are read again (%d)", r.n)
	}
}

// The impact is said for what the gate judged the write does, not for a
// second reading of the decision: a correction of labels alone that also
// deletes the object it replaces reboots; one the gate judged to reach no
// node does not.
func TestImpactFollowsTheJudgedDisruption(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetKind("MachineConfig")
	u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
	d := &engine.Decision{Asset: &catalog.Asset{Name: "a", Disruption: catalog.DisruptionReboot}, Rendered: u, Live: u}
	reboots := engine.Disruption{Reboot: true, Pool: "worker", Pools: []string{"worker"}}
	if !needsImpact(d, engine.Result{Outcome: engine.Applied, Drift: []string{"/metadata/labels/x"}, Disruption: &reboots}) {
		t.Fatal("a metadata correction the gate judged a reboot (it deletes the object it replaces) rolls the pool")
	}
	if needsImpact(d, engine.Result{Outcome: engine.Applied, Drift: []string{"/spec/config"}, Disruption: &engine.Disruption{}}) {
		t.Fatal("a write the gate judged to reach no node rolls nothing")
	}
	if !needsImpact(d, engine.Result{Outcome: engine.Applied, Drift: []string{"/spec/config"}}) {
		t.Fatal("nothing judged: the decision's own disruption")
	}
}
