package nodefacts

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func genNode(r *rand.Rand, name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, l := range []string{"node-role.kubernetes.io/worker", "node-role.kubernetes.io/master", "node-role.kubernetes.io/infra",
		"feature.node.kubernetes.io/memory-numa", "feature.node.kubernetes.io/pci-0300_10de.present", "feature.node.kubernetes.io/iommu-enabled"} {
		if r.IntN(3) == 0 {
			n.Labels[l] = "true"
		}
	}
	if r.IntN(4) == 0 {
		n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	if r.IntN(4) == 0 {
		swap := int64(1 << 30)
		n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &swap}
	}
	n.ResourceVersion = fmt.Sprint(r.Int())
	return n
}

func pools() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, name := range []string{"master", "worker", "infra"} {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"nodeSelector": map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/" + name: ""}}},
		}})
	}
	return out
}

func synced(x *Index) { x.synced = func() bool { return true } }

// The index kept from events equals the classes of the node list the
// events leave, names included; and an event says it changed something
// exactly when the print of what the last Read saw changed.
func TestIndexFollowsEvents(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 2))
	for run := 0; run < 200; run++ {
		x := New()
		synced(x)
		live := map[string]*corev1.Node{}
		list := func() []corev1.Node {
			out := make([]corev1.Node, 0, len(live))
			for _, n := range live {
				out = append(out, *n)
			}
			return out
		}
		ps := pools()
		var readPrint string
		if x.Read(ps, nil) == nil {
			t.Fatal("a synced index reads nothing")
		}
		readPrint = rendercontext.NodePrint(rendercontext.NodesOf(nil), ps, nil)
		for ev := 0; ev < 60; ev++ {
			name := fmt.Sprintf("n%d", r.IntN(12))
			before := rendercontext.NodesOf(list())
			var changed bool
			switch {
			case r.IntN(5) == 0:
				delete(live, name)
				changed = x.Delete(name)
			case r.IntN(3) == 0 && live[name] != nil:
				// A heartbeat: only the resourceVersion moves.
				n := live[name].DeepCopy()
				n.ResourceVersion += "1"
				live[name] = n
				changed = x.Set(n)
			default:
				n := genNode(r, name)
				live[name] = n
				changed = x.Set(n)
			}
			want := rendercontext.NodesOf(list())
			// An event that moved no node between classes is nothing new
			// (an earlier one enqueued whatever is pending).
			moved := !reflect.DeepEqual(before.Classes, want.Classes)
			if now := rendercontext.NodePrint(want, ps, nil); changed != (moved && now != readPrint) {
				t.Fatalf("run %d event %d: changed=%v, moved %v, the print moved %v", run, ev, changed, moved, now != readPrint)
			}
			if r.IntN(4) == 0 {
				got := x.Read(ps, nil)
				readPrint = rendercontext.NodePrint(want, ps, nil)
				if !reflect.DeepEqual(got.Classes, want.Classes) && (len(got.Classes) != 0 || len(want.Classes) != 0) {
					t.Fatalf("run %d event %d: classes %+v, the list's %+v", run, ev, got.Classes, want.Classes)
				}
				rc := rendercontext.New(rendercontext.Facts{NodeSet: got, Observed: rendercontext.Observed{Pools: ps}})
				wrc := rendercontext.New(rendercontext.Facts{Nodes: list(), Observed: rendercontext.Observed{Pools: ps}})
				for _, p := range []string{"master", "worker", "infra"} {
					a, _ := rc.PoolNodes(p)
					b, _ := wrc.PoolNodes(p)
					if !slices.Equal(a, b) {
						t.Fatalf("run %d event %d: pool %s nodes %v, the list's %v", run, ev, p, a, b)
					}
				}
			}
		}
	}
}

// No node fact is told from the index before it holds every node of the
// initial list: the caller lists the nodes instead.
func TestReadBeforeSync(t *testing.T) {
	x := New()
	x.Set(genNode(rand.New(rand.NewPCG(1, 1)), "n0"))
	if s := x.Read(nil, nil); s != nil {
		t.Fatalf("read before the watch started: %+v", s)
	}
	x.synced = func() bool { return false }
	if s := x.Read(nil, nil); s != nil {
		t.Fatalf("read before the watch synced: %+v", s)
	}
}

// Label churn within the kinds of machine a pool already has costs no
// reconcile: of many relabellings on a stable cluster, few enqueue.
func TestChurnWithinKnownClassesEnqueuesNothing(t *testing.T) {
	x := New()
	synced(x)
	worker := func(name string, gpu bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		if gpu {
			n.Labels["feature.node.kubernetes.io/pci-0300_10de.present"] = "true"
		}
		return n
	}
	for i := 0; i < 100; i++ {
		x.Set(worker(fmt.Sprint(i), i%2 == 0))
	}
	x.Read(pools(), nil)
	for i := 0; i < 100; i++ {
		if x.Set(worker(fmt.Sprint(i), i%2 == 1)) {
			t.Fatalf("node %d swapped its GPU label with the others': nothing read changed, yet it enqueues", i)
		}
	}
	if !x.Set(worker("new", false)) {
		t.Fatal("a node joined: the node count changed, yet it did not enqueue")
	}
}

// Events, reads and walks of the names run at once (the informer's
// goroutine, a reconcile, a debug endpoint): `go test -race` checks them.
func TestIndexConcurrent(t *testing.T) {
	x := New()
	synced(x)
	ps := pools()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < 2000; i++ {
			name := fmt.Sprintf("n%d", r.IntN(50))
			if r.IntN(5) == 0 {
				x.Delete(name)
			} else {
				x.Set(genNode(r, name))
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		rc := rendercontext.New(rendercontext.Facts{NodeSet: x.Read(ps, nil), Observed: rendercontext.Observed{Pools: ps}})
		if _, err := rc.PoolNodes("worker"); err != nil {
			t.Fatal(err)
		}
	}
}
