package impact

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func vmi(ns, name, node, phase, strategy, migratable string) *VMI {
	v := &VMI{Metadata: VMIMeta{Namespace: ns, Name: name}, Spec: VMISpec{EvictionStrategy: strategy},
		Status: VMIStatus{NodeName: node, Phase: phase}}
	if migratable != "" {
		v.Status.Conditions = []VMICondition{{Type: "LiveMigratable", Status: migratable, Reason: "DisksNotLiveMigratable"}}
	}
	return v
}

// Every strategy, set on the VMI or by the cluster, with the VMI
// migratable, not, or not yet known, against KubeVirt's documented
// behaviour written out independently.
func TestJudge(t *testing.T) {
	want := func(strategy, migratable string) Fate {
		ok := migratable == "True"
		switch {
		case strategy == "LiveMigrate" && ok, strategy == "LiveMigrateIfPossible" && ok:
			return Migrates
		case strategy == "LiveMigrateIfPossible", strategy == "None":
			return Stops
		}
		return BlocksDrain // LiveMigrate and not migratable, External, unknown
	}
	for _, s := range []string{"LiveMigrate", "LiveMigrateIfPossible", "None", "External", "Sideways"} {
		for _, m := range []string{"True", "False", ""} {
			for _, onVMI := range []bool{true, false} {
				// Set on the VMI, its own wins over the cluster's.
				v, cluster := vmi("ns", "v", "n", "Running", s, m), "None"
				if !onVMI {
					v, cluster = vmi("ns", "v", "n", "Running", "", m), s
				}
				fate, why := Judge(v, cluster)
				if fate != want(s, m) {
					t.Errorf("strategy %s (on VMI %v), LiveMigratable %q: %s, want %s", s, onVMI, m, fate, want(s, m))
				}
				if fate != Migrates && why == "" {
					t.Errorf("strategy %s, LiveMigratable %q: %s without a reason", s, m, fate)
				}
			}
		}
	}
}

// pages answers a VMI list in pages of the size asked, as an API server.
type pages struct {
	items []*VMI
	calls int
}

func (p *pages) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("not used")
}

func (p *pages) List(_ context.Context, l client.ObjectList, opts ...client.ListOption) error {
	p.calls++
	o := (&client.ListOptions{}).ApplyOptions(opts)
	start, _ := strconv.Atoi(o.Continue)
	end := min(start+int(o.Limit), len(p.items))
	list := l.(*VMIList)
	for _, v := range p.items[start:end] {
		list.Items = append(list.Items, *v)
	}
	if end < len(p.items) {
		list.Continue = strconv.Itoa(end)
	}
	return nil
}

// A pool's VMIs are counted by the nodes MCO assigns to it, across pages;
// VMIs elsewhere, not running, or without a node do not count.
func TestOf(t *testing.T) {
	node := func(name, role string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""}}}
	}
	nodes := []corev1.Node{node("w1", "worker"), node("w2", "worker"), node("m1", "master")}
	rc := rendercontext.New(rendercontext.Facts{AssumeAllKinds: true, Nodes: nodes})
	r := &pages{}
	for i := 0; i < 1200; i++ {
		r.items = append(r.items, vmi("ns", fmt.Sprintf("m%d", i), []string{"w1", "w2"}[i%2], "Running", "", "True"))
	}
	r.items = append(r.items,
		vmi("ns", "pinned", "w1", "Running", "LiveMigrate", "False"),
		vmi("ns", "scratch", "w2", "Running", "None", ""),
		vmi("ns", "on-master", "m1", "Running", "None", ""),
		vmi("ns", "done", "w1", "Succeeded", "None", ""),
		vmi("ns", "pending", "", "Pending", "None", ""))
	got := Of(context.Background(), r, rc, []string{"worker", "master"})
	w, m := got[0], got[1]
	if w.Migrate != 1200 || len(w.Blocking) != 1 || !strings.HasPrefix(w.Blocking[0], "ns/pinned: ") || len(w.Stopping) != 1 || len(w.Nodes) != 2 {
		t.Errorf("worker: %+v", w)
	}
	if m.Migrate != 0 || len(m.Stopping) != 1 || len(m.Blocking) != 0 {
		t.Errorf("master: %+v", m)
	}
	if r.calls != 3 {
		t.Errorf("%d list calls for %d VMIs in pages of %d", r.calls, len(r.items), pageSize)
	}
	if s := w.String(); !strings.Contains(s, "1200 VMI(s) live-migrate") || !strings.Contains(s, "1 block the drain") {
		t.Errorf("worker: %s", s)
	}
	// Without KubeVirt's CRD served there are no VMs, and nothing is read.
	r.calls = 0
	if got := Of(context.Background(), r, rendercontext.New(rendercontext.Facts{Nodes: nodes}), []string{"worker"}); got[0].Migrate != 0 || r.calls != 0 {
		t.Errorf("no VMI CRD: %+v after %d calls", got[0], r.calls)
	}
}

// Counts says how many, never which: no node or VMI name, whatever the
// pool holds.
func TestCountsNamesNothing(t *testing.T) {
	for _, p := range []Pool{
		{Pool: "worker", Nodes: []string{"node-a", "node-b"}, Migrate: 3, Blocking: []string{"ns-x/vm-b: not migratable"}, Stopping: []string{"ns-y/vm-c: None"}},
		{Pool: "worker", Nodes: []string{"node-a"}, Unknown: "VirtualMachineInstances could not be listed: forbidden"},
		{Pool: "infra"},
	} {
		c := p.Counts()
		for _, name := range append(append(append([]string{}, p.Nodes...), p.Blocking...), p.Stopping...) {
			for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == ':' || r == ' ' }) {
				if len(part) > 4 && strings.Contains(c, part) {
					t.Errorf("%q names %q", c, part)
				}
			}
		}
		if !strings.Contains(c, fmt.Sprintf("%d node(s)", len(p.Nodes))) {
			t.Errorf("%q does not count the nodes", c)
		}
	}
}
