package gate

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// mcoPool is a MachineConfigPool whose status is as MCO's node controller
// writes it (machine-config-operator pkg/controller/node/status.go,
// calculateStatus): Updated True only when every machine is updated, ready
// and available, Updating its opposite unless paused, observedGeneration
// the generation judged; cond names a condition that is True.
func mcoPool(name string, roles []any, cond string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigSelector": map[string]any{
		"matchExpressions": []any{map[string]any{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}}}}}
	u.SetName(name)
	updated, updating, degraded, running := "True", "False", "False", "rendered-"+name+"-2"
	switch cond {
	case "Updating":
		// A rollout: the render controller made a new render, the nodes
		// still run the old one.
		updated, updating, running = "False", "True", "rendered-"+name+"-1"
	case "Degraded":
		degraded = "True"
	}
	_ = unstructured.SetNestedField(u.Object, "rendered-"+name+"-2", "spec", "configuration", "name")
	_ = unstructured.SetNestedField(u.Object, running, "status", "configuration", "name")
	_ = unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"type": "Updated", "status": updated},
		map[string]any{"type": "Updating", "status": updating},
		map[string]any{"type": "Degraded", "status": degraded, "message": "node w1 failed"},
	}, "status", "conditions")
	_ = unstructured.SetNestedField(u.Object, int64(0), "status", "observedGeneration")
	return u
}

// A reboot-causing write waits while its pool is updating (until it is at
// rest, saying so once it has waited long) or degraded (never longer than
// the bound); other pools and other writes never wait.
func TestPoolBusyHoldsRebootWrites(t *testing.T) {
	mc := func(role string) engine.Disruption { return engine.Disruption{Reboot: true, Pool: role} }
	now := time.Unix(1000, 0)
	p := newPoolWaits()
	p.now = func() time.Time { return now }
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{mcoPool("worker", nil, "Updating"), mcoPool("master", nil, ""), mcoPool("infra", nil, "Degraded")}

	if why, retry, held := p.wait(rc, "a-worker", mc("worker")); !held || retry != poolBusyRecheck || !strings.Contains(why, "worker is updating") {
		t.Fatalf("an updating pool holds: %v %s %q", held, retry, why)
	}
	if why, _, held := p.wait(rc, "a-infra", mc("infra")); !held || !strings.Contains(why, "degraded (node w1 failed)") {
		t.Fatalf("a degraded pool holds: %v %q", held, why)
	}
	if _, _, held := p.wait(rc, "a-master", mc("master")); held {
		t.Fatal("a pool at rest does not hold")
	}
	if _, _, held := p.wait(rc, "cm", engine.Disruption{}); held {
		t.Fatal("a write that reboots nothing never waits")
	}
	// Asked at every recheck, as the requeue does.
	for end := now.Add(PoolBusyBound - poolBusyRecheck); now.Before(end); {
		now = now.Add(poolBusyRecheck)
		if _, _, held := p.wait(rc, "a-infra", mc("infra")); !held {
			t.Fatalf("released %s before the bound", PoolBusyBound-end.Sub(now))
		}
		if why, _, held := p.wait(rc, "a-worker", mc("worker")); !held || strings.Contains(why, "waiting for over") {
			t.Fatalf("an updating pool: %v %q", held, why)
		}
	}
	now = now.Add(poolBusyRecheck)
	if _, _, held := p.wait(rc, "a-infra", mc("infra")); held {
		t.Fatal("a degraded pool holds at most the bound: it may wait for exactly this correction")
	}
	// Asked again in the same pass (a peek then the judge; a deletion on
	// the cached HCO then on the fresh one): the same answer.
	if _, _, held := p.wait(rc, "a-infra", mc("infra")); held {
		t.Fatal("released by the bound, then held again by the next question of the same pass")
	}
	if why, _, held := p.wait(rc, "a-worker", mc("worker")); !held || !strings.Contains(why, "waiting for over 1h0m0s") {
		t.Fatalf("a pool MCO is still rolling holds past the bound, saying so: %v %q", held, why)
	}
	// A wait nobody asked about for a while (the write was staged, or no
	// longer due) has ended: a new one starts afresh, never inheriting a
	// start so old that it would skip the wait.
	// Let go, and asked again a recheck later: the write did not land or
	// another is due, so a new bounded wait begins.
	now = now.Add(poolBusyRecheck + time.Second)
	if _, _, held := p.wait(rc, "a-infra", mc("infra")); !held {
		t.Fatal("a write let go by the bound a while ago lets every later write skip a degraded pool")
	}
	now = now.Add(2 * PoolBusyBound)
	if _, _, held := p.wait(rc, "a-infra", mc("infra")); !held {
		t.Fatal("the start of an old, unfinished wait let a write skip a busy pool")
	}
	if _, _, held := p.wait(&rendercontext.RenderContext{}, "a-worker", mc("worker")); held {
		t.Fatal("no pool read (offline, not OpenShift): no pool to wait for")
	}
	// A write reaching a degraded pool and one MCO is rolling: the
	// rollout holds it past the bound, whatever the pools' order.
	both := engine.Disruption{Reboot: true, Pool: "infra", Pools: []string{"infra", "worker"}}
	for i := 0; i < int(2*PoolBusyBound/poolBusyRecheck); i++ {
		now = now.Add(poolBusyRecheck)
		if why, _, held := p.wait(rc, "a-both", both); !held || !strings.Contains(why, "worker is updating") {
			t.Fatalf("a write onto a rolling pool and a degraded one: %v %q", held, why)
		}
	}
	// Rolling for over the bound, then degraded: the bound counts from
	// when the wait became bounded, never from the rollout before it.
	rolling := &rendercontext.RenderContext{}
	rolling.Pools = []*unstructured.Unstructured{mcoPool("z", nil, "Updating")}
	for i := 0; i < int(PoolBusyBound/poolBusyRecheck)+10; i++ {
		now = now.Add(poolBusyRecheck)
		if _, _, held := p.wait(rolling, "a-z", mc("z")); !held {
			t.Fatal("a rolling pool holds")
		}
	}
	degraded := &rendercontext.RenderContext{}
	degraded.Pools = []*unstructured.Unstructured{mcoPool("z", nil, "Degraded")}
	now = now.Add(poolBusyRecheck)
	if why, _, held := p.wait(degraded, "a-z", mc("z")); !held || !strings.Contains(why, "degraded") {
		t.Fatalf("degraded after a long rollout: the bounded wait starts now: %v %q", held, why)
	}
	unread := &rendercontext.RenderContext{}
	unread.PoolsErr = errForbidden
	for range 200 {
		now = now.Add(poolBusyRecheck)
		if _, _, held := p.wait(unread, "a-worker", mc("worker")); !held {
			t.Fatal("pools that cannot be read hold, without a bound: unknown is never at rest")
		}
	}
}

type forbidden struct{}

func (forbidden) Error() string { return "machineconfigpools is forbidden" }

var errForbidden error = forbidden{}

// A pool's state is MCO's, read from the status as its node controller
// writes it (machine-config-operator pkg/controller/node/status.go,
// calculateStatus): a table from that code.
func TestPoolStateAsMCOWritesIt(t *testing.T) {
	at := func(mut func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := mcoPool("worker", nil, "")
		u.SetGeneration(4)
		_ = unstructured.SetNestedField(u.Object, int64(4), "status", "observedGeneration")
		_ = unstructured.SetNestedField(u.Object, "rendered-worker-b", "spec", "configuration", "name")
		_ = unstructured.SetNestedField(u.Object, "rendered-worker-b", "status", "configuration", "name")
		if mut != nil {
			mut(u)
		}
		return u
	}
	cond := func(t, status string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range list {
				if m := c.(map[string]any); m["type"] == t {
					m["status"] = status
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
		}
	}
	cases := []struct {
		name    string
		pool    *unstructured.Unstructured
		busy    string
		bounded bool
	}{
		{"at rest: all machines updated, the render its nodes run", at(nil), "", false},
		{"no status (a pool just created)", func() *unstructured.Unstructured {
			u := at(nil)
			delete(u.Object, "status")
			return u
		}(), "no state from MCO", false},
		{"a change MCO has not judged (observedGeneration behind)", at(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "status", "observedGeneration")
		}), "not judged it yet", false},
		{"a rollout: a new render, the nodes on the old one (Updating)", at(func(u *unstructured.Unstructured) {
			cond("Updated", "False")(u)
			cond("Updating", "True")(u)
			_ = unstructured.SetNestedField(u.Object, "rendered-worker-a", "status", "configuration", "name")
		}), "is updating", false},
		{"rendered, the nodes not yet told (spec's render not the status's)", at(func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "rendered-worker-a", "status", "configuration", "name")
		}), "is updating", false},
		// allUpdated also needs every machine ready and available: a node
		// down for repair keeps Updated False, Updating True, with no
		// rollout (the status's render is the spec's).
		{"a node not ready, no rollout (Updating, same render)", at(func(u *unstructured.Unstructured) { cond("Updated", "False")(u); cond("Updating", "True")(u) }), "is not updated", true},
		{"Updated False, same render", at(cond("Updated", "False")), "is not updated", true},
		{"degraded during a rollout", at(func(u *unstructured.Unstructured) {
			cond("Degraded", "True")(u)
			cond("Updating", "True")(u)
			_ = unstructured.SetNestedField(u.Object, "rendered-worker-a", "status", "configuration", "name")
		}), "degraded", true},
		{"Degraded (node, render or build)", at(cond("Degraded", "True")), "degraded", true},
		{"paused with a render pending: MCO rolls nothing (Updating False)", at(func(u *unstructured.Unstructured) {
			cond("Updated", "False")(u)
			_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
			_ = unstructured.SetNestedField(u.Object, "rendered-worker-a", "status", "configuration", "name")
		}), "", false},
		{"paused and degraded", at(func(u *unstructured.Unstructured) {
			cond("Degraded", "True")(u)
			_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
		}), "degraded", true},
	}
	for _, c := range cases {
		rc := &rendercontext.RenderContext{}
		rc.Pools = []*unstructured.Unstructured{c.pool}
		why, bounded := engine.PoolBusy(rc, "worker")
		if (c.busy == "") != (why == "") || !strings.Contains(why, c.busy) || bounded != c.bounded {
			t.Errorf("%s: %q bounded=%v, want %q bounded=%v", c.name, why, bounded, c.busy, c.bounded)
		}
	}
}

// A worker-role write also rolls the custom pools that take worker's
// MachineConfigs: it waits while one of them is updating, and a write to
// another pool does not.
func TestPoolBusyCoversCustomPoolsTheWriteRolls(t *testing.T) {
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{mcoPool("worker", []any{"worker"}, ""), mcoPool("virt", []any{"worker", "virt"}, "Updating"), mcoPool("master", []any{"master"}, "")}
	mc := func(role string) engine.Disruption {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": "MachineConfig"}}
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": role})
		return engine.Disruption{Reboot: true, Pool: role, Pools: rc.PoolsReached(u)}
	}
	p := newPoolWaits()
	if why, _, held := p.wait(rc, "worker-mc", mc("worker")); !held || !strings.Contains(why, "virt is updating") {
		t.Fatalf("a worker MachineConfig while the custom pool rolls: held=%v %q", held, why)
	}
	if _, _, held := p.wait(rc, "master-mc", mc("master")); held {
		t.Fatal("another pool's rollout holds the master pool's write")
	}
	if got := mc("worker").String(); got != "reboots pools virt, worker" {
		t.Fatalf("String() = %q", got)
	}
}
