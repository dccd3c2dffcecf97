package gate

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// A reboot-causing write waits while its pool is updating or degraded,
// never longer than the bound; other pools and other writes never wait.
func TestPoolBusyHoldsRebootWritesBounded(t *testing.T) {
	pool := func(name, cond string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName(name)
		if cond != "" {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": cond, "status": "True", "message": "node w1 failed"}}, "status", "conditions")
		}
		return u
	}
	mc := func(role string) engine.Disruption { return engine.Disruption{Reboot: true, Pool: role} }
	now := time.Unix(1000, 0)
	p := newPoolWaits()
	p.now = func() time.Time { return now }
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{pool("worker", "Updating"), pool("master", ""), pool("infra", "Degraded")}

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
	// Asked at every recheck, as the requeue does, until the bound.
	for end := now.Add(PoolBusyBound - poolBusyRecheck); now.Before(end); {
		now = now.Add(poolBusyRecheck)
		if _, _, held := p.wait(rc, "a-worker", mc("worker")); !held {
			t.Fatalf("released %s before the bound", PoolBusyBound-end.Sub(now))
		}
	}
	now = now.Add(poolBusyRecheck)
	if _, _, held := p.wait(rc, "a-worker", mc("worker")); held {
		t.Fatal("every wait has a deadline: after the bound the write goes")
	}
	// A wait nobody asked about for a while (the write was staged, or no
	// longer due) has ended: a new one starts afresh, never inheriting a
	// start so old that it would skip the wait.
	p.wait(rc, "a-infra", mc("infra"))
	now = now.Add(2 * PoolBusyBound)
	if _, _, held := p.wait(rc, "a-infra", mc("infra")); !held {
		t.Fatal("the start of an old, unfinished wait let a write skip a busy pool")
	}
	if _, _, held := p.wait(&rendercontext.RenderContext{}, "a-worker", mc("worker")); held {
		t.Fatal("no pool read (offline, not OpenShift): unknown never holds")
	}
}

// A worker-role write also rolls the custom pools that take worker's
// MachineConfigs: it waits while one of them is updating, and a write to
// another pool does not.
func TestPoolBusyCoversCustomPoolsTheWriteRolls(t *testing.T) {
	pool := func(name string, roles []any, cond string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigSelector": map[string]any{
			"matchExpressions": []any{map[string]any{"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": roles}}}}}}
		u.SetName(name)
		if cond != "" {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": cond, "status": "True"}}, "status", "conditions")
		}
		return u
	}
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{pool("worker", []any{"worker"}, ""), pool("virt", []any{"worker", "virt"}, "Updating"), pool("master", []any{"master"}, "")}
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
