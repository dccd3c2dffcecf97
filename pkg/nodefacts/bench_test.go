package nodefacts

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// indexOf is an index of n workers of 41 labels, half with NUMA, read once.
func indexOf(b *testing.B, n int) (*Index, []*corev1.Node) {
	x := New()
	synced(x)
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		l := map[string]string{"node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/memory-numa": []string{"true", "false"}[i%2],
			"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel", "feature.node.kubernetes.io/iommu-enabled": "true"}
		for k := 0; k < 37; k++ {
			l[fmt.Sprintf("feature.node.kubernetes.io/cpu-cpuid.F%d", k)] = "true"
		}
		nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%05d", i), Labels: l}}
		x.Set(nodes[i])
	}
	x.Read(pools(), nil)
	return x, nodes
}

// A node-label event at 5,000 nodes: a worker's NUMA label flips, its
// pool keeping both kinds (no reconcile follows).
func BenchmarkNodeLabelEvent5000(b *testing.B) {
	x, nodes := indexOf(b, 5000)
	flipped := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		f := n.DeepCopy()
		f.Labels["feature.node.kubernetes.io/memory-numa"] = []string{"false", "true"}[i%2]
		flipped[i] = f
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(nodes)
		if (i/len(nodes))%2 == 0 {
			x.Set(flipped[k])
		} else {
			x.Set(nodes[k])
		}
	}
}

// A reconcile's node facts at 5,000 nodes: read the index and build the
// context's topology and hardware (no node listed or copied).
func BenchmarkReadNodeFacts5000(b *testing.B) {
	x, _ := indexOf(b, 5000)
	ps := pools()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rc := rendercontext.New(rendercontext.Facts{NodeSet: x.Read(ps, nil)})
		if _, err := rc.HardwareFor(map[string]string{rendercontext.ParamRole: "worker"}); err != nil {
			b.Fatal(err)
		}
	}
}
