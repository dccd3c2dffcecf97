package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// testSettle is the suite's settle period: long enough that a flicker the
// spec undoes at once is shorter, short enough for the specs it delays.
const testSettle = 10 * time.Second

const vendorLabel = "feature.node.kubernetes.io/cpu-model.vendor_id"

// settleSpecs: a reboot-causing write that a changed fact asks for waits
// until the fact has held for the settle period; a flicker writes nothing.
func settleSpecs(ctx context.Context) {
	It("holds a reboot-causing change a new fact asks for until the fact has settled, and writes nothing for a flicker", func() {
		gpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "settle-gpu", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", pciLabel: "true"}}}
		Expect(k8s.Create(ctx, gpu)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, gpu))).To(Succeed()) })
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "") })
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).Should(BeNil())
		})
		// Created once the node's appearance has settled.
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(testSettle + 30*time.Second).ShouldNot(BeNil())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		mc := get(mcGVK, "", pciMC)
		rv, stamp := mc.GetResourceVersion(), mc.GetAnnotations()[annotations.Facts]
		Expect(stamp).NotTo(BeEmpty(), "a reboot-causing object carries the print of its facts")

		// An AMD worker joins: the pool's kernel arguments would change.
		amd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "settle-amd", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", vendorLabel: "AuthenticAMD"}}}
		Expect(k8s.Create(ctx, amd)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, amd))).To(Succeed()) })
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Settling))
		Eventually(func() int { return len(events("Settling", pciMC)) }).Should(BeNumerically(">", 0))
		// It leaves again before the period is over (a node that failed
		// to join): back to the facts the object was written from.
		Expect(k8s.Delete(ctx, amd)).To(Succeed())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv), "a flicker shorter than the settle period writes nothing: no reboot")

		// It joins for good: one write, no sooner than the period after.
		amd = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "settle-amd", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", vendorLabel: "AuthenticAMD"}}}
		joined := time.Now()
		Expect(k8s.Create(ctx, amd)).To(Succeed())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Settling))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv))
		Eventually(func() []any { return kernelArgs(pciMC) }).WithTimeout(testSettle + 30*time.Second).Should(ContainElement("amd_iommu=on"))
		Expect(time.Since(joined)).To(BeNumerically(">=", testSettle), "written only once the fact held for the settle period")
		Expect(get(mcGVK, "", pciMC).GetAnnotations()[annotations.Facts]).NotTo(Equal(stamp))
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
	})
}
