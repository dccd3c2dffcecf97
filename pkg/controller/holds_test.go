package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Outside the window a spec change of a MachineConfig is staged, back at
// the opening but never later than the resync; a change of its labels or
// annotations reaches no node and is never held; a creation is.
func TestHoldsStageOnlyWhatReachesNodes(t *testing.T) {
	mon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{opts: Options{Resync: 10 * time.Minute, Now: func() time.Time { return mon }}, pools: newPoolWaits()}
	r.pools.now = r.now
	hco := &unstructured.Unstructured{Object: map[string]any{}}
	hco.SetAnnotations(map[string]string{annotations.DisruptionWindow: "Sat 02:00-06:00 UTC"})
	rc := rendercontext.New(rendercontext.Facts{HCO: hco})
	mc := &unstructured.Unstructured{Object: map[string]any{}}
	mc.SetKind("MachineConfig")
	mc.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
	d := &engine.Decision{Asset: &catalog.Asset{Name: "mc", Disruption: catalog.DisruptionReboot}, Rendered: mc, Live: mc}
	hold := r.holds(rc)

	res, held := hold(d, engine.Result{Drift: []string{"/spec/kernelArguments"}})
	if !held || res.Outcome != engine.Staged || res.RetryAfter != r.opts.Resync {
		t.Fatalf("spec drift outside the window: %v %+v", held, res)
	}
	if _, held := hold(d, engine.Result{Drift: []string{"/metadata/labels/x"}}); held {
		t.Fatal("a label change reaches no node: never held")
	}
	created := &engine.Decision{Asset: d.Asset, Rendered: mc}
	if _, held := hold(created, engine.Result{Drift: []string{"(object absent)"}}); !held {
		t.Fatal("a creation reboots the pool: staged")
	}
	r.opts.Resync = 30 * 24 * time.Hour
	if res, _ := hold(d, engine.Result{Drift: []string{"/spec"}}); res.RetryAfter != 110*time.Hour {
		t.Fatalf("back when the window opens (Saturday 02:00): %s", res.RetryAfter)
	}
}
