package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const (
	pciSwitch = "platform.kubevirt.io/enable-pci-passthrough"
	pciMC     = "50-worker-kubevirt-iommu"
	pciLabel  = "feature.node.kubernetes.io/pci-10de.present"
)

var kcGVK = mcGVK.GroupVersion().WithKind("KubeletConfig")

// safetySpecs run inside the ordered suite: what the autopilot must never
// destroy, and how it tells a person's edit from a fight.
func safetySpecs(ctx context.Context) {
	// Excluded, or named by an entry not understood (a plural: it may
	// have meant this object), the tombstone is kept: the first by the
	// deletion guard, the second by the gate's input check.
	for _, entry := range []string{"MachineConfig/50-swap-enable", "machineconfigs/50-swap-enable"} {
		It("never lets a tombstone delete an object listed in disabled-resources as "+entry, func() {
			const old = "50-swap-enable"
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisabledResources, entry)
			})
			ours := newObj(mcGVK, "", old)
			ours.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
			Expect(unstructured.SetNestedStringSlice(ours.Object, []string{"nosmt"}, "spec", "kernelArguments")).To(Succeed())
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(ours), client.FieldOwner(annotations.FieldManager))).To(Succeed())
			poke()
			Eventually(func() int { return len(events("TombstoneSkipped", old, "disabled-resources", entry)) }).Should(BeNumerically(">", 0))
			Expect(get(mcGVK, "", old)).NotTo(BeNil(), "provably ours, but listed: kept")

			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisabledResources, "")
			})
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", old) }).Should(BeNil())
		})
	}

	It("keeps an opted-in MachineConfig while its hardware fact flickers, and removes it only when the switch is turned off", func() {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-worker", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", pciLabel: "true",
		}}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "true") })
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).ShouldNot(BeNil())
		rv := get(mcGVK, "", pciMC).GetResourceVersion()

		// The NFD label goes away (an NFD upgrade, a drained node): a
		// derived fact, not the admin's intent.
		setNodeLabel(ctx, node.Name, pciLabel, "")
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Retained))
		Eventually(func() int { return len(events("Retained", pciMC)) }).Should(BeNumerically(">", 0))
		Expect(testutil.ToFloat64(metrics.AssetOutcome.WithLabelValues("pci-passthrough", string(engine.Retained)))).To(Equal(1.0))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv), "kept and not written: no reboot")

		// Back again: unchanged, still no write.
		setNodeLabel(ctx, node.Name, pciLabel, "true")
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Unchanged))
		Expect(get(mcGVK, "", pciMC).GetResourceVersion()).To(Equal(rv))

		// The admin turns it off: that is intent, so it goes.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, pciSwitch, "") })
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", pciMC) }).Should(BeNil())
		Eventually(outcomeOf("pci-passthrough")).Should(Equal(engine.Inactive))
	})

	It("keeps the autopilot's other children of a masked map when someone edits one", func() {
		lm := []string{"spec", "virtualization", "liveMigrationConfig"}
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.IgnoreFields, "/spec/virtualization/liveMigrationConfig")
		})
		rv := update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, int64(7), append(lm, "parallelMigrationsPerCluster")...)).To(Succeed())
		})
		outcomeAt("hco-golden-config", rv)
		poke()
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Unchanged))
		h := hco()
		Expect(nestedInt(h, append(lm, "parallelMigrationsPerCluster")...)).To(Equal(int64(7)), "the edited child stays")
		Expect(nestedInt(h, append(lm, "parallelOutboundMigrationsPerNode")...)).To(Equal(int64(2)), "the autopilot's other child keeps its live value")

		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.IgnoreFields, "")
			setAnnotation(u, annotations.Patch, "")
		})
		Eventually(func() int64 { return nestedInt(hco(), append(lm, "parallelMigrationsPerCluster")...) }).Should(Equal(int64(5)))
	})

	It("reverts a key another manager adds to an atomic map", func() {
		requireVendorCRDs()
		const kc = "kubevirt-kubelet-worker"
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", kc) }).ShouldNot(BeNil())
		update(kcGVK, "", kc, "other-operator", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, "x", "spec", "machineConfigPoolSelector", "matchLabels", "extra")).To(Succeed())
		})
		Eventually(func() map[string]any {
			m, _, _ := unstructured.NestedMap(get(kcGVK, "", kc).Object, "spec", "machineConfigPoolSelector", "matchLabels")
			return m
		}).ShouldNot(HaveKey("extra"), func() string {
			st := status("kubelet-worker")
			return fmt.Sprintf("%+v (live resourceVersion %s)", st, get(kcGVK, "", kc).GetResourceVersion())
		})
	})

	It("does not count a create as a correction, makes every correction of a person within the budget, and sends nothing while throttled", func() {
		// A process that never saw the object creates it without a token
		// (re-creating what it saw deleted is a correction: see pkg/engine).
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", swapMC) }).ShouldNot(BeNil())
		stopManager()
		Expect(k8s.Delete(ctx, get(mcGVK, "", swapMC))).To(Succeed())
		startManager()
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", swapMC) }).ShouldNot(BeNil())

		// A person edits until the autopilot stops correcting. The budget
		// holds Burst tokens and refills one per Refill, so whatever the
		// machine's speed every edit is corrected until at least Burst
		// corrections are made (the create took none), and no more are made
		// than the budget allows by now.
		start, mark := time.Now(), requests.mark()
		budget := func() int { return testThrottle.Burst + int(time.Since(start)/testThrottle.Refill) }
		edit := func() string {
			return update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, "3.3.0", "spec", "config", "ignition", "version")).To(Succeed())
			})
		}
		corrected := 0
		for {
			rv := edit()
			var judged string
			Eventually(func() string {
				if st := status("swap-enable"); st.ObservedResourceVersion == rv && st.Outcome == engine.Throttled {
					judged = string(engine.Throttled)
				} else if u := get(mcGVK, "", swapMC); u.GetResourceVersion() != rv {
					judged = "corrected"
				}
				return judged
			}).WithPolling(5*time.Millisecond).ShouldNot(BeEmpty(), "edit %d is corrected or throttled", corrected+1)
			if judged == string(engine.Throttled) {
				break
			}
			corrected++
			Expect(corrected).To(BeNumerically("<=", budget()), "corrections beyond the budget")
			Expect(corrected).To(BeNumerically("<", 4*testThrottle.Burst), "each correction took longer than a refill: the budget was never spent")
		}
		Expect(corrected).To(BeNumerically(">=", testThrottle.Burst), "every correction within the budget is made: the create took no token")

		// The budget is spent: nothing is sent for the object but what the
		// refills allow (not even a dry-run while no token is there), and a
		// reconcile with nothing else to change sends nothing else at all.
		throttled := requests.mark()
		hrv := poke()
		Expect(outcomeAt("hco-golden-config", hrv).Outcome).To(Equal(engine.Unchanged))
		reconciledAt(hrv)
		onSwap := func(reqs []string) (applies, dryRuns int) {
			for _, r := range writes(reqs) {
				switch {
				case strings.HasSuffix(r, "/machineconfigs/"+swapMC):
					applies++
				case strings.HasSuffix(r, "/machineconfigs/"+swapMC+" (dry-run)"):
					dryRuns++
				}
			}
			return applies, dryRuns
		}
		applies, dryRuns := onSwap(requests.since(mark))
		Expect(applies).To(BeNumerically("<=", budget()), "writes to the fought object: %v", requests.since(mark))
		Expect(dryRuns).To(BeNumerically("<=", applies), "a dry-run only before a write the budget allows: %v", requests.since(mark))
		var status, other []string
		refillApplies, _ := onSwap(requests.since(throttled))
		for _, r := range requests.since(throttled) {
			switch {
			case strings.Contains(r, "/machineconfigs/"+swapMC):
			case strings.HasSuffix(r, "/configmaps/"+fleetstatus.Name):
				status = append(status, r)
			default:
				other = append(other, r)
			}
		}
		Expect(other).To(BeEmpty(), "a reconcile with nothing to change sends nothing")
		// The fleet status says the feature is degraded (and active again
		// after a refill's write): at most once per state change.
		Expect(len(status)).To(BeNumerically("<=", 1+refillApplies), "fleet status writes: %v", status)
		// One Thrashing event per episode: an episode ends only with a
		// refill's correction, so there are no more than the corrections
		// made beyond the first Burst, plus the one that is still on.
		onObject := 0
		for _, e := range events("Thrashing", swapMC) {
			if e.Regarding.Name == swapMC {
				onObject++
			}
		}
		Expect(onObject).To(And(BeNumerically(">=", 1), BeNumerically("<=", 1+corrected-testThrottle.Burst)), "Thrashing events")
		// The fight stopped: it ends by itself when the budget refills.
		Eventually(outcomeOf("swap-enable")).WithTimeout(2 * testThrottle.Refill * time.Duration(testThrottle.Burst)).Should(Equal(engine.Unchanged))
	})
}

// hcoLifecycleSpecs run late: they delete the HCO (held by a finalizer).
func hcoLifecycleSpecs(ctx context.Context) {
	It("writes and deletes nothing while the HCO is being deleted", func() {
		const fin = "test.kubevirt.io/hold"
		update(hcoGVK, hcoNamespace, hcoName, "hco-operator", func(u *unstructured.Unstructured) {
			u.SetFinalizers(append(u.GetFinalizers(), fin))
		})
		Expect(k8s.Delete(ctx, hco())).To(Succeed())
		Eventually(func() report.IdleReason {
			if i := rec.Snapshot().Health.Idle; i != nil {
				return i.Reason
			}
			return ""
		}).Should(Equal(report.IdleHCOTerminating))
		Expect(testutil.ToFloat64(metrics.Idle.WithLabelValues(string(report.IdleHCOTerminating)))).To(Equal(1.0))
		// The fleet status says so, instead of the features it no longer manages.
		Eventually(statusData).Should(And(
			HaveKeyWithValue(fleetstatus.KeyAutopilot, fleetstatus.Idle),
			HaveKeyWithValue(fleetstatus.KeyIdleReason, string(report.IdleHCOTerminating)),
			HaveKeyWithValue(fleetstatus.KeyHealthy, "false"), Not(HaveKey("psi.state"))))

		// The operand's owner removes it during uninstall: not re-created.
		Expect(k8s.Delete(ctx, get(mcGVK, "", psiMC))).To(Succeed())
		since := time.Now()
		poke()
		Eventually(func() bool { return rec.Snapshot().Health.LastReconcile.After(since) }).Should(BeTrue())
		Expect(get(mcGVK, "", psiMC)).To(BeNil(), "no write during uninstall")

		update(hcoGVK, hcoNamespace, hcoName, "hco-operator", func(u *unstructured.Unstructured) { u.SetFinalizers(nil) })
		Eventually(hco).Should(BeNil())
		Eventually(func() report.IdleReason {
			if i := rec.Snapshot().Health.Idle; i != nil {
				return i.Reason
			}
			return ""
		}).Should(Equal(report.IdleHCOAbsent))
		Eventually(func() string { return statusData()[fleetstatus.KeyIdleReason] }).Should(Equal(string(report.IdleHCOAbsent)))
	})
}

func setNodeLabel(ctx context.Context, name, key, value string) {
	Eventually(func() error {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		if value == "" {
			delete(n.Labels, key)
		} else {
			n.Labels[key] = value
		}
		return k8s.Update(ctx, n)
	}).Should(Succeed())
}

// requireVendorCRDs fails under CI (CI=true) and skips, saying why, on a
// developer machine when the vendors' CRDs are not available.
func requireVendorCRDs() {
	if vendorDir() != "" {
		return
	}
	if os.Getenv("CI") != "" {
		Fail("VENDOR_CRDS is unset under CI: set it to the vendors' CRDs (../shared/crds)")
	}
	testenv.NotRun("integration: "+CurrentSpecReport().FullText(), "needs the vendors' CRDs (VENDOR_CRDS)")
	Skip("needs the vendors' CRDs: set VENDOR_CRDS (CI: ../shared/crds)")
}
