package integration

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
)

// dropInSpecs: where the worker kubelet reads drop-ins, its settings move
// from the autopilot's KubeletConfig into a drop-in beside an admin's
// KubeletConfig, in one write the gate judges, leaving the admin's
// settings to it.
func dropInSpecs(ctx context.Context) {
	const ours, dropIn, unit, admin = "kubevirt-kubelet-worker", "90-worker-kubevirt-kubelet", "01-worker-kubelet", "dropin-admin-tuning"

	It("moves the worker kubelet settings into a drop-in once the kubelet reads the folder, in one write inside the window, and leaves the admin's KubeletConfig its settings", func() {
		requireVendorCRDs()
		reconciledSince(poke())
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", ours) }).ShouldNot(BeNil())
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
		workerPoolAtRest(ctx)
		opensAt := closedWindow("admin")

		// An admin's KubeletConfig on the worker pool: before the drop-in
		// folder, the autopilot's own stands back (Conflict).
		kc := newObj(kcGVK, "", admin)
		Expect(unstructured.SetNestedField(kc.Object, map[string]any{"matchLabels": map[string]any{
			"pools.operator.machineconfiguration.openshift.io/worker": ""}}, "spec", "machineConfigPoolSelector")).To(Succeed())
		Expect(unstructured.SetNestedField(kc.Object, map[string]any{"maxPods": int64(300)}, "spec", "kubeletConfig")).To(Succeed())
		Expect(unstructured.SetNestedField(kc.Object, true, "spec", "autoSizingReserved")).To(Succeed())
		Expect(k8s.Create(ctx, kc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, kc))).To(Succeed()) })
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Conflict))

		// MCO's kubelet.service for workers now reads the folder (an
		// upgrade to 4.21): outside the window both writes wait.
		u := newObj(mcGVK, "", unit)
		Expect(unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "kubelet.service", "enabled": true,
			"contents": "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf \\\n  --config-dir=/etc/openshift/kubelet.conf.d\n"}},
			"spec", "config", "systemd", "units")).To(Succeed())
		Expect(unstructured.SetNestedField(u.Object, "3.4.0", "spec", "config", "ignition", "version")).To(Succeed())
		Expect(k8s.Create(ctx, u)).To(Succeed())
		DeferCleanup(func() {
			// Back to the KubeletConfig: the drop-in is removed by hand
			// (a derived fact never deletes), and the next specs find the
			// autopilot's KubeletConfig again.
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, kc))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, get(mcGVK, "", unit)))).To(Succeed())
			if d := get(mcGVK, "", dropIn); d != nil {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, d))).To(Succeed())
			}
			poke()
			Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", ours) }).WithTimeout(testSettle + time.Minute).ShouldNot(BeNil())
			Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
		})
		Eventually(outcomeOf("kubelet-dropin-worker")).Should(Equal(engine.Staged))
		Expect(status("kubelet-dropin-worker").Reason).To(ContainSubstring("disruption window"))
		reconciledAt(poke())
		Expect(get(mcGVK, "", dropIn)).To(BeNil(), "no drop-in outside the window")
		Expect(get(kcGVK, "", ours)).NotTo(BeNil(), "the KubeletConfig stays until the drop-in goes")
		Expect(outcomeOf("kubelet-worker")()).To(Equal(engine.Inactive))
		// The preview says both, staged together.
		diff := runCLI(1, "--kubeconfig", writeKubeconfig(GinkgoT().TempDir()), "--namespace", hcoNamespace, "--output", "diff")
		Expect(diff).To(MatchRegexp(`MachineConfig\.machineconfiguration\.openshift\.io/` + dropIn + ` created.*\[staged`))
		Expect(diff).To(MatchRegexp(`KubeletConfig\.machineconfiguration\.openshift\.io/` + ours + ` deleted \(replaced by MachineConfig\.machineconfiguration\.openshift\.io/` + dropIn + `\).*\[staged`))

		// The window opens: the drop-in is created and the KubeletConfig
		// deleted in the same reconcile, nothing else written for them.
		mark := requests.mark()
		clockShift.Store(int64(time.Until(opensAt) + time.Minute))
		poke()
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", dropIn) }).WithTimeout(time.Minute).ShouldNot(BeNil())
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", ours) }).WithTimeout(time.Minute).Should(BeNil())
		Eventually(outcomeOf("kubelet-dropin-worker")).Should(Equal(engine.Unchanged))
		var applies, deletes int
		for _, r := range writes(requests.since(mark)) {
			switch {
			case strings.HasSuffix(r, "/machineconfigs/"+dropIn) && !strings.HasSuffix(r, "(dry-run)"):
				applies++
			case r == "DELETE /apis/machineconfiguration.openshift.io/v1/kubeletconfigs/"+ours:
				deletes++
			}
		}
		Expect([]int{applies, deletes}).To(Equal([]int{1, 1}), "one apply and one delete: %v", writes(requests.since(mark)))
		Eventually(func() int { return len(events("PoolRollout", dropIn)) }).Should(BeNumerically(">", 0))

		// What the admin's KubeletConfig sets stays theirs: maxPods, and the
		// node sizing file with auto-sizing; reported as deferred to it.
		spec, err := kubeletdropin.Settings(get(mcGVK, "", dropIn))
		Expect(err).NotTo(HaveOccurred())
		Expect(spec["kubeletConfig"]).NotTo(HaveKey("maxPods"))
		Expect(spec["kubeletConfig"]).To(HaveKey("nodeStatusMaxImages"))
		Expect(spec).NotTo(HaveKey("autoSizingReserved"), "the sizing file is the admin's (autoSizingReserved)")
		var deferred []string
		for _, d := range status("kubelet-dropin-worker").Deferred {
			deferred = append(deferred, d.String())
		}
		Expect(deferred).To(ContainElements("kubelet maxPods (KubeletConfig.machineconfiguration.openshift.io/"+admin+")", "kubelet autoSizingReserved (KubeletConfig.machineconfiguration.openshift.io/"+admin+")"))
		Eventually(func() int {
			return len(events("Deferred", dropIn, "KubeletConfig.machineconfiguration.openshift.io/"+admin))
		}).Should(BeNumerically(">", 0))

		// The admin hands maxPods back: the drop-in carries it again.
		update(kcGVK, "", admin, "admin", func(k *unstructured.Unstructured) {
			unstructured.RemoveNestedField(k.Object, "spec", "kubeletConfig", "maxPods")
		})
		Eventually(func() map[string]any {
			spec, err := kubeletdropin.Settings(get(mcGVK, "", dropIn))
			Expect(err).NotTo(HaveOccurred())
			return spec["kubeletConfig"].(map[string]any)
		}).WithTimeout(time.Minute).Should(HaveKey("maxPods"))
	})
}
