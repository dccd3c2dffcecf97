package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
)

// nodeEventSpecs: node events that change no fact a reconcile read enqueue
// nothing; those that do, enqueue.
func nodeEventSpecs(ctx context.Context) {
	It("enqueues a node event only when it changes a fact the last reconcile read", func() {
		enqueued := func() float64 { return testutil.ToFloat64(metrics.NodeEvents.WithLabelValues("enqueued")) }
		ignored := func() float64 { return testutil.ToFloat64(metrics.NodeEvents.WithLabelValues("ignored")) }
		const usbLabel = "feature.node.kubernetes.io/usb-ef_046d_0825.present"
		node := func(name string, extra ...string) *corev1.Node {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
			for _, l := range extra {
				n.Labels[l] = "true"
			}
			return n
		}
		// Two of each kind of worker, and one of a kind of its own.
		nodes := []*corev1.Node{node("churn-a", pciLabel), node("churn-b"), node("churn-c", pciLabel), node("churn-d"), node("churn-e", usbLabel)}
		reconciledSince(poke())
		w0, e0 := workers(), enqueued()
		for _, n := range nodes {
			Expect(k8s.Create(ctx, n)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, n))).To(Succeed()) })
		}
		// Read once they are all counted: the events below are judged
		// against what this read saw.
		Eventually(workers).Should(Equal(w0 + len(nodes)))
		Expect(enqueued()).To(BeNumerically(">", e0), "a node that joins changes the node count")

		relabel := func(name string, change func(map[string]string)) {
			n := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
			change(n.Labels)
			Expect(k8s.Update(ctx, n)).To(Succeed())
		}
		e1, i1 := enqueued(), ignored()
		// churn-a becomes like churn-b and back; both kinds keep a node.
		relabel("churn-a", func(l map[string]string) { delete(l, pciLabel) })
		relabel("churn-a", func(l map[string]string) { l[pciLabel] = "true" })
		// A label the autopilot does not read.
		relabel("churn-b", func(l map[string]string) { l["topology.kubernetes.io/zone"] = "z1" })
		// A status heartbeat.
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "churn-d"}, n)).To(Succeed())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, n)).To(Succeed())
		Eventually(ignored).Should(BeNumerically(">=", i1+4))
		Expect(enqueued()).To(Equal(e1), "no event above changed a fact the reconcile reads")

		// The only USB worker loses its USB device: the pool's hardware
		// changes, and that enqueues.
		relabel("churn-e", func(l map[string]string) { delete(l, usbLabel) })
		Eventually(enqueued).Should(BeNumerically(">", e1))
	})
}
