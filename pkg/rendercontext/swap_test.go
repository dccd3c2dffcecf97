package rendercontext_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Overcommit beyond RAM needs swap on every node that runs VMs, as the
// kubelets report it; over generated clusters the verdict is the oracle's:
// every worker-role node has a positive swap capacity. Masters that run no
// VMs, and the swap MachineConfig's mere presence, never count.
func TestSwapOnEveryVMNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 500 {
		var nodes []corev1.Node
		vmNodes, withSwap := 0, 0
		for i := range rng.IntN(6) {
			l := map[string]string{}
			switch rng.IntN(4) {
			case 0:
				l["node-role.kubernetes.io/master"] = ""
			case 1:
				l["node-role.kubernetes.io/master"], l["node-role.kubernetes.io/worker"] = "", ""
			case 2:
				l["node-role.kubernetes.io/worker"], l["node-role.kubernetes.io/infra"] = "", ""
			default:
				l["node-role.kubernetes.io/worker"] = ""
			}
			n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), Labels: l}}
			has := false
			switch rng.IntN(4) {
			case 0: // an old kubelet: no swap status
			case 1:
				zero := int64(0)
				n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &zero}
			case 2:
				n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{} // capacity unknown
			default:
				c := int64(1 + rng.IntN(1<<30))
				n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &c}
				has = true
			}
			if _, w := l["node-role.kubernetes.io/worker"]; w {
				vmNodes++
				if has {
					withSwap++
				}
			}
			nodes = append(nodes, n)
		}
		rc := rendercontext.New(rendercontext.Facts{Nodes: nodes})
		want := vmNodes > 0 && withSwap == vmNodes
		if got := rc.SwapOnEveryVMNode(); got != want {
			t.Fatalf("round %d: %d VM nodes, %d with swap: got %v", round, vmNodes, withSwap, got)
		}
		if (len(rc.SwapGaps()) == 0) != (withSwap == vmNodes) {
			t.Fatalf("round %d: gaps %v with %d of %d", round, rc.SwapGaps(), withSwap, vmNodes)
		}
		total := 0
		for _, p := range rc.Swap() {
			total += p.Nodes
		}
		if total != vmNodes {
			t.Fatalf("round %d: %d VM nodes counted over pools, want %d", round, total, vmNodes)
		}
	}
}
