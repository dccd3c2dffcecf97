package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
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
	mc := func(role string) *engine.Decision {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetKind("MachineConfig")
		u.SetName("99-" + role)
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": role})
		return &engine.Decision{Asset: &catalog.Asset{Name: "a-" + role, Disruption: catalog.DisruptionReboot}, Rendered: u}
	}
	now := time.Unix(1000, 0)
	p := newPoolWaits()
	p.now = func() time.Time { return now }
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{pool("worker", "Updating"), pool("master", ""), pool("infra", "Degraded")}

	if res, held := p.hold(rc, mc("worker"), engine.Result{Drift: []string{"/spec"}}); !held || res.Outcome != engine.Settling || !strings.Contains(res.Reason, "worker is updating") || len(res.Drift) != 1 {
		t.Fatalf("an updating pool holds: %v %+v", held, res)
	}
	if res, held := p.hold(rc, mc("infra"), engine.Result{}); !held || !strings.Contains(res.Reason, "degraded (node w1 failed)") {
		t.Fatalf("a degraded pool holds: %v %+v", held, res)
	}
	if _, held := p.hold(rc, mc("master"), engine.Result{}); held {
		t.Fatal("a pool at rest does not hold")
	}
	if _, held := p.hold(rc, &engine.Decision{Asset: &catalog.Asset{Name: "cm"}}, engine.Result{}); held {
		t.Fatal("a write that reboots nothing never waits")
	}
	now = now.Add(PoolBusyBound)
	if _, held := p.hold(rc, mc("worker"), engine.Result{}); held {
		t.Fatal("every wait has a deadline: after the bound the write goes")
	}
	if _, held := p.hold(&rendercontext.RenderContext{}, mc("worker"), engine.Result{}); held {
		t.Fatal("no pool read (offline, not OpenShift): unknown never holds")
	}
}
