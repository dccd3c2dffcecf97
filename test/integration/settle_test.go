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
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
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

// factBudgetSpecs: a node's own labels never roll its pool again and again.
func factBudgetSpecs(ctx context.Context) {
	It("lets one node's labels add to a pool's settings once, never take them back, and bounds fact-driven rollouts per object", func() {
		gpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "budget-gpu", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", pciLabel: "true"}}}
		Expect(k8s.Create(ctx, gpu)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, gpu))).To(Succeed()) })
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "") })
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).Should(BeNil())
		})
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(testSettle + 30*time.Second).ShouldNot(BeNil())
		Eventually(outcomeOf("pci-passthrough")).WithTimeout(testSettle + 30*time.Second).Should(Equal(engine.Unchanged))
		Expect(kernelArgs(pciMC)).NotTo(ContainElement("amd_iommu=on"))

		// The cluster's record says changed facts rewrote it twice today.
		recent := annotations.FormatFactRollouts([]time.Time{time.Now().Add(-3 * time.Hour), time.Now().Add(-time.Hour)})
		update(mcGVK, "", pciMC, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.FactRollouts, recent) })
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		rv := get(mcGVK, "", pciMC).GetResourceVersion()

		// The GPU node labels itself AMD: the pool's IOMMU arguments would
		// change, a third fact-driven rollout today. Held once settled.
		setNodeLabel(ctx, gpu.Name, vendorLabel, "AuthenticAMD")
		Eventually(func() string { return status("pci-passthrough").Reason }).WithTimeout(testSettle + 30*time.Second).Should(ContainSubstring(annotations.FactRollouts))
		Expect(status("pci-passthrough").Outcome).To(Equal(engine.Staged))
		Eventually(func() int { return len(events("Staged", pciMC)) }).Should(BeNumerically(">", 0))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv), "held: no rollout: %v", logs.find(map[string]string{"object": "MachineConfig.machineconfiguration.openshift.io/" + pciMC}))

		// A person says so: the record removed, the write goes, counted.
		update(mcGVK, "", pciMC, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.FactRollouts, "") })
		Eventually(func() []any { return kernelArgs(pciMC) }).Should(ContainElement("amd_iommu=on"))
		written, err := annotations.ParseFactRollouts(get(mcGVK, "", pciMC).GetAnnotations()[annotations.FactRollouts])
		Expect(err).NotTo(HaveOccurred())
		Expect(written).To(HaveLen(1), "the rollout is counted on the object")
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		rv = get(mcGVK, "", pciMC).GetResourceVersion()

		// The node takes the label back: the AMD argument stays (each
		// vendor's kernel ignores the other's), so no second rollout.
		setNodeLabel(ctx, gpu.Name, vendorLabel, "")
		Eventually(func() []string {
			eval, _, err := rec.Preview(ctx)
			Expect(err).NotTo(HaveOccurred())
			h, err := eval.Context.HardwareFor(map[string]string{rendercontext.ParamRole: "worker"})
			Expect(err).NotTo(HaveOccurred())
			return h.CPUVendors
		}).ShouldNot(ContainElement("AMD"))
		reconciledSince(poke())
		Expect(outcomeOf("pci-passthrough")()).To(Equal(engine.Unchanged))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv), "taking a label back rolls nothing")
		Expect(kernelArgs(pciMC)).To(ContainElement("amd_iommu=on"))
	})
}
