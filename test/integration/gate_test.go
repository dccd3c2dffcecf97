package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// gateSpecs: every write that can disrupt a pool goes through one gate,
// whatever its path; decisions come from the cluster's state.
func gateSpecs(ctx context.Context) {
	poolGVK := mcGVK.GroupVersion().WithKind("MachineConfigPool")
	setUpdating := func(status string) {
		Expect(get(poolGVK, "", "worker")).NotTo(BeNil(), "the worker pool (created by the KubeletConfig spec)")
		setPoolState(ctx, "worker", status == "True")
	}
	deletesOf := func(mark int, name string) int {
		n := 0
		for _, r := range requests.since(mark) {
			if r == "DELETE /apis/machineconfiguration.openshift.io/v1/machineconfigs/"+name {
				n++
			}
		}
		return n
	}

	It("stages the deletion of a switched-off feature's MachineConfig outside the window and while its pool is updating, then deletes it once", func() {
		requireVendorCRDs()
		gpu := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gate-gpu", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", pciLabel: "true"}}}
		Expect(k8s.Create(ctx, gpu)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, gpu))).To(Succeed())
			untilSettled()
		})
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "") })
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(time.Minute).Should(BeNil())
		})
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(testSettle + 30*time.Second).ShouldNot(BeNil())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		uid := get(mcGVK, "", pciMC).GetUID()

		opensAt := closedWindow("admin") // a daily window two hours from now: closed
		mark := requests.mark()
		// The admin turns the feature off: its MachineConfig goes, but a
		// deletion reboots the pool like any write.
		reconciledAt(update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "") }))
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Staged))
		Expect(status("pci-passthrough").Reason).To(And(ContainSubstring("switched off"), ContainSubstring("disruption window")))
		reconciledAt(poke())
		Expect(get(mcGVK, "", pciMC).GetUID()).To(Equal(uid), "not deleted outside the window")

		// Inside the window, while MCO rolls the pool: still held.
		setUpdating("True")
		DeferCleanup(func() { setUpdating("False") })
		clockShift.Store(int64(time.Until(opensAt) + time.Minute))
		reconciledAt(poke())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Settling))
		Expect(status("pci-passthrough").Reason).To(ContainSubstring("MachineConfigPool worker is updating"))
		reconciledAt(poke())
		Expect(get(mcGVK, "", pciMC).GetUID()).To(Equal(uid), "not deleted while its pool rolls")
		Expect(deletesOf(mark, pciMC)).To(BeZero())

		// The pool at rest, inside the window: deleted, once.
		setUpdating("False")
		poke()
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).WithTimeout(time.Minute).Should(BeNil())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Inactive))
		reconciledAt(poke())
		Expect(deletesOf(mark, pciMC)).To(Equal(1))
		Eventually(func() int { return len(events("PoolRollout", pciMC)) }).Should(BeNumerically(">", 0))
	})

	It("corrects a person's edit at once while a fact changes that the object does not render from, and writes nothing for that fact", func() {
		requireVendorCRDs()
		untilSettled()
		before := get(mcGVK, "", psiMC)
		stamp := before.GetAnnotations()[annotations.Facts]
		Expect(stamp).NotTo(BeEmpty())
		// An AMD worker joins: a fact of the worker pool, which the PSI
		// MachineConfig does not render from.
		workersBefore := workers()
		amd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gate-amd", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", vendorLabel: "AuthenticAMD"}}}
		Expect(k8s.Create(ctx, amd)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, amd))).To(Succeed())
			untilSettled()
		})
		Eventually(workers).Should(Equal(workersBefore + 1))
		reconciledAt(poke())
		Expect(get(mcGVK, "", psiMC).GetResourceVersion()).To(Equal(before.GetResourceVersion()), "a fact that changes no object costs no write")

		// Within the settle period of that fact, an admin's edit of the
		// MachineConfig is corrected at once, not a settle period later.
		settlingBefore := len(events("Settling", psiMC))
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Expect(events("Settling", psiMC)).To(HaveLen(settlingBefore), "corrected at once: never held for the fact")
		Expect(get(mcGVK, "", psiMC).GetAnnotations()[annotations.Facts]).To(Equal(stamp))
	})

	It("writes what a person turns on at once while a worker's label its object does not read changes", func() {
		requireVendorCRDs()
		const thpMC, thpSwitch = "90-worker-kubevirt-thp", "platform.kubevirt.io/enable-thp-tuning"
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gate-relabel", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed())
			untilSettled()
		})
		untilSettled()
		// The worker gains a hardware label (NFD found a GPU): a fact of
		// the worker pool, which the THP MachineConfig does not read.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		node.Labels[pciLabel] = "true"
		Expect(k8s.Update(ctx, node)).To(Succeed())
		Eventually(func() bool {
			eval, _, err := rec.Preview(ctx)
			Expect(err).NotTo(HaveOccurred())
			hw, err := eval.Context.HardwareFor(map[string]string{"pool": "worker"})
			return err == nil && hw.PCIDevices
		}).Should(BeTrue(), "the relabel is seen")
		settlingBefore := len(events("Settling", thpMC))

		// Within that fact's settle period, an admin turns THP tuning on:
		// intent, which no fact it reads asks for. It is created at once.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, thpSwitch, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, thpSwitch, "") })
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", thpMC) }).WithTimeout(time.Minute).Should(BeNil())
		})
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", thpMC) }).ShouldNot(BeNil())
		Expect(events("Settling", thpMC)).To(HaveLen(settlingBefore), "never held for a fact it does not read")
		Expect(get(mcGVK, "", thpMC).GetAnnotations()).NotTo(HaveKey(annotations.FactRollouts), "not counted as a fact-driven rollout")
	})

	It("renders the HCO's dependents from the HCO in effect while the HCO is report-only", func() {
		requireVendorCRDs()
		field := []string{"spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"}
		golden := nestedInt(hco(), field...)
		// The admin leaves the HCO to themselves (report-only on the HCO
		// alone) and runs another value than the golden config's.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, "report-only")
			Expect(unstructured.SetNestedField(u.Object, golden+7, field...)).To(Succeed())
		})
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.Mode, "")
				setAnnotation(u, loadAware, "")
			})
			Eventually(func() int64 { return nestedInt(hco(), field...) }).Should(Equal(golden))
			Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
		})
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Drifted))
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })
		evictionLimit := func() int64 {
			kd := get(kdGVK, deschedulerNamespace, "cluster")
			if kd == nil {
				return -1
			}
			return nestedInt(kd, "spec", "evictionLimits", "total")
		}
		// The descheduler evicts no more VMs per run than the cluster's
		// live migration moves: the value in effect, never the golden one
		// the autopilot did not write.
		Eventually(evictionLimit).Should(Equal(golden + 7))
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		reconciledAt(poke())
		Expect(evictionLimit()).To(Equal(golden + 7))
		Expect(nestedInt(hco(), field...)).To(Equal(golden+7), "report-only: the HCO is not written")
	})

	It("reports a write the API server refuses as refused, not as a fight, and writes once it is allowed", func() {
		requireVendorCRDs()
		untilSettled()
		sa := "system:serviceaccount:" + operatorNamespace + ":virt-platform-autopilot"
		const policyName = "deny-autopilot-psi"
		failFast := admissionregistrationv1.Fail
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: policyName},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: &failFast,
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: []string{psiMC},
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{mcGVK.Group}, APIVersions: []string{"*"},
							Resources: []string{"machineconfigs"}},
					}}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: fmt.Sprintf("request.userInfo.username != %q", sa),
					Message:    "change freeze: the PSI MachineConfig is frozen",
				}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policyName},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policyName,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, policy))).To(Succeed()) })
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, binding))).To(Succeed()) })
		// The policy is in force once the autopilot's own identity is
		// refused (a dry run changes nothing).
		asAutopilot := rest.CopyConfig(cfg)
		asAutopilot.Impersonate = rest.ImpersonationConfig{UserName: sa}
		sac, err := client.New(asAutopilot, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			return sac.Patch(ctx, get(mcGVK, "", psiMC), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"platform.kubevirt.io/facts":"probe"}}}`)), client.DryRunAll)
		}).Should(MatchError(ContainSubstring("change freeze")))

		mark, thrashingBefore := requests.mark(), len(events("Thrashing", psiMC))
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Refused))
		Expect(status("psi-enable").Reason).To(ContainSubstring("change freeze"))
		Eventually(func() []string { return notes(events("WriteRefused", psiMC)) }).Should(ContainElement(ContainSubstring("change freeze")))
		// Refused more often than the write budget allows corrections: a
		// refusal spends none, and is retried on a backoff, not at once.
		refusedWrites := func() int {
			n := 0
			for _, r := range writes(requests.since(mark)) {
				if strings.HasSuffix(r, "/machineconfigs/"+psiMC) {
					n++
				}
			}
			return n
		}
		Eventually(refusedWrites).WithTimeout(time.Minute).Should(BeNumerically(">", testThrottle.Burst))
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Refused))
		Expect(events("Thrashing", psiMC)).To(HaveLen(thrashingBefore), "a refusal is not a fight")
		Expect(testutil.ToFloat64(metrics.Throttled.WithLabelValues("MachineConfig", "", psiMC, "kubectl-edit"))).To(BeZero())
		// Read right after a refusal: had it spent a token, the bucket
		// would be one short (a token refills in testThrottle.Refill).
		Expect(rec.Snapshot().Throttle["MachineConfig.machineconfiguration.openshift.io/"+psiMC].Tokens).To(BeNumerically(">", float64(testThrottle.Burst)-0.5), "every refusal gave its token back")
		Expect(rec.Snapshot().Throttle["MachineConfig.machineconfiguration.openshift.io/"+psiMC].Throttled).To(BeFalse())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))

		// The freeze is lifted: the next try corrects it.
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(90 * time.Second).Should(Equal([]any{"psi=1"}))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})
}

// notes are the Events' messages.
func notes(evs []eventsv1.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Note
	}
	return out
}
