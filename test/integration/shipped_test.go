package integration

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// shippedImage is the image HCO v1.18.0 and v1.18.1 pin for the shipped
// autopilot v0.0.10 (kubevirt/hyperconverged-cluster-operator
// deploy/images.csv, AUTOPILOT_IMAGE).
const shippedImage = "quay.io/openshift-virtualization/virt-platform-autopilot@sha256:ba94138eb74ebf3508dd1f2722773d0f1091aa683947ff1a1a5690168fed6384"

// shippedDeployment is the Deployment OLM installs from the HCO v1.18.1
// CSV (install.spec.deployments, name virt-platform-autopilot: its labels,
// selector and manager container), in the HCO's namespace.
func shippedDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "virt-platform-autopilot", "control-plane": "controller-manager",
		"app.kubernetes.io/component": "autopilot", "app.kubernetes.io/managed-by": "olm",
		"app.kubernetes.io/part-of": "hyperconverged-cluster", "app.kubernetes.io/version": "1.18.1"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: shipped.DeploymentName, Namespace: hcoNamespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "virt-platform-autopilot", "control-plane": "controller-manager"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "virt-platform-autopilot",
					Containers: []corev1.Container{{Name: "manager", Image: shippedImage, Command: []string{"/manager"},
						Args: []string{"--leader-elect", "--namespace=" + hcoNamespace}}},
				},
			},
		},
	}
}

// shippedSpecs: beside the autopilot the HCO's CSV ships, this one writes
// nothing while that one acts, says so, and hands over on the switch.
func shippedSpecs(ctx context.Context) {
	shippedState := func() shipped.State {
		if v := rec.Snapshot().Health.ShippedAutopilot; v != nil {
			return v.State
		}
		return shipped.Absent
	}
	idleReason := func() report.IdleReason {
		if i := rec.Snapshot().Health.Idle; i != nil {
			return i.Reason
		}
		return ""
	}
	setSwitch := func(v string) string {
		return update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, v) })
	}
	// theirApply is the shipped autopilot's server-side apply of the psi
	// MachineConfig: its field manager name (the same as this one's),
	// its managed-by label, no asset stamp, and the kernel argument given.
	theirApply := func(arg string) {
		mc := newObj(mcGVK, "", psiMC)
		mc.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue, "machineconfiguration.openshift.io/role": "worker"})
		Expect(unstructured.SetNestedStringSlice(mc.Object, []string{arg}, "spec", "kernelArguments")).To(Succeed())
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(mc), client.FieldOwner(annotations.FieldManager), client.ForceOwnership)).To(Succeed())
	}
	acting := func() float64 {
		return testutil.ToFloat64(metrics.ShippedAutopilot.WithLabelValues(string(shipped.Acting)))
	}

	It("writes nothing while the shipped autopilot acts, says so once, hands over when the switch is removed and back when it is set", func() {
		requireVendorCRDs()
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		d := shippedDeployment()
		Expect(k8s.Create(ctx, d)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, d))).To(Succeed())
			setSwitch("")
			Eventually(shippedState).Should(Equal(shipped.Absent))
			Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		})

		// Installed with the HCO and not opted in: its releases write
		// nothing with the switch absent, so this one keeps managing.
		Eventually(shippedState).Should(Equal(shipped.Idle))
		Expect(rec.Snapshot().Health.ShippedAutopilot.Release).To(Equal("v0.0.10"))
		Expect(idleReason()).To(BeEmpty())

		// The admin opts the shipped one in: this one holds every write.
		setSwitch("true")
		Eventually(idleReason).Should(Equal(report.IdleBesideShipped))
		Expect(acting()).To(Equal(1.0))
		Eventually(func() []eventsv1.Event {
			return events(report.ShippedEvent, "Deployment "+hcoNamespace+"/"+shipped.DeploymentName, annotations.Autopilot+"-")
		}).Should(HaveLen(1))
		Eventually(func() []string {
			d := statusData()
			return []string{d[fleetstatus.KeyAutopilot], d[fleetstatus.KeyIdleReason]}
		}).Should(Equal([]string{fleetstatus.Idle, string(report.IdleBesideShipped)}))

		// It writes its own: the kernel argument, under the same field
		// manager name; the HCO's golden setting is changed too.
		field := []string{"spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"}
		golden := nestedInt(hco(), field...)
		mark := requests.mark()
		theirApply("psi=0")
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, golden+2, field...)).To(Succeed())
		})
		reconciledSince(poke())
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "beside it: nothing written")
		Expect(nestedInt(hco(), field...)).To(Equal(golden+2), "nothing written, the HCO included")
		Expect(writes(requests.since(mark))).To(BeEmpty(), "no write, no delete, no dry run")
		Expect(status("psi-enable").Outcome).To(Equal(engine.Paused))
		Expect(status("psi-enable").Reason).To(ContainSubstring("OpenShift Virtualization ships"))
		Expect(events(report.ShippedEvent)).To(HaveLen(1), "said once")

		// The documented handover: the switch removed. That one idles
		// (its releases), this one corrects what it finds, naming the
		// writer under its own field manager name.
		setSwitch("")
		Eventually(shippedState).Should(Equal(shipped.Idle))
		Eventually(idleReason).Should(BeEmpty())
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Eventually(func() int64 { return nestedInt(hco(), field...) }).Should(Equal(golden))
		Eventually(func() []eventsv1.Event { return events("DriftCorrected", psiMC, shipped.Opponent) }).ShouldNot(BeEmpty())
		Expect(acting()).To(Equal(0.0))

		// Handing back: the switch set again; this one holds again.
		setSwitch("true")
		Eventually(shippedState).Should(Equal(shipped.Acting))
		theirApply("psi=0")
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))

		// A release this one does not know may act with the switch
		// absent: held, and said so.
		setSwitch("")
		Eventually(shippedState).Should(Equal(shipped.Idle))
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Template.Spec.Containers[0].Image = "quay.io/openshift-virtualization/virt-platform-autopilot@sha256:" + strings.Repeat("0", 64)
		Expect(k8s.Update(ctx, d)).To(Succeed())
		Eventually(shippedState).Should(Equal(shipped.Unknown))
		Eventually(idleReason).Should(Equal(report.IdleBesideShipped))
		theirApply("psi=0")
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "an unknown release holds")

		// Scaled to zero, it writes nothing: managed again.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Replicas = ptr.To[int32](0)
		Expect(k8s.Update(ctx, d)).To(Succeed())
		Eventually(shippedState).Should(Equal(shipped.Idle))
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
	})

	It("hands over in one rollout per pool: the shipped autopilot's MachineConfigs and KubeletConfig go with this one's writes, staged to the window; one it paused is kept and reported", func() {
		requireVendorCRDs()
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		kcGVK := mcGVK.GroupVersion().WithKind("KubeletConfig")
		const theirSwap, theirPSI, theirPCI, theirKC = "90-worker-swap-online", "99-openshift-machineconfig-worker-psi-karg", "50-virt-pci-passthrough", "virt-perf-settings"
		d := shippedDeployment()
		Expect(k8s.Create(ctx, d)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, d))).To(Succeed())
			setSwitch("")
			for _, n := range []string{theirSwap, theirPSI, theirPCI} {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, newObj(mcGVK, "", n)))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, newObj(kcGVK, "", theirKC)))).To(Succeed())
			Eventually(shippedState).Should(Equal(shipped.Absent))
			untilSettled()
		})
		setSwitch("true")
		Eventually(shippedState).Should(Equal(shipped.Acting))

		// Its objects as it applies them (v0.0.10's templates): its field
		// manager name, its label, no asset stamp.
		theirs := func(gvk schema.GroupVersionKind, name string, mutate func(u *unstructured.Unstructured)) {
			u := newObj(gvk, "", name)
			u.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue, "machineconfiguration.openshift.io/role": "worker"})
			mutate(u)
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(annotations.FieldManager), client.ForceOwnership)).To(Succeed())
		}
		karg := func(args ...string) func(u *unstructured.Unstructured) {
			return func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedStringSlice(u.Object, args, "spec", "kernelArguments")).To(Succeed())
			}
		}
		theirs(mcGVK, theirPSI, karg("psi=1"))
		theirs(mcGVK, theirSwap, func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, map[string]any{"ignition": map[string]any{"version": "3.5.0"},
				"storage": map[string]any{"files": []any{map[string]any{"path": "/etc/openshift/kubelet.conf.d/90-swap.conf", "mode": int64(420),
					"contents": map[string]any{"source": "data:,failSwapOn%3A%20false%0A"}}}}}, "spec", "config")).To(Succeed())
		})
		// One a person paused on the shipped autopilot (its edit-war mark).
		theirs(mcGVK, theirPCI, karg("intel_iommu=on", "iommu=pt"))
		update(mcGVK, "", theirPCI, "kubectl-annotate", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.ShippedPaused, "true") })
		theirs(kcGVK, theirKC, func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
			Expect(unstructured.SetNestedField(u.Object, map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}},
				"spec", "machineConfigPoolSelector")).To(Succeed())
			Expect(unstructured.SetNestedField(u.Object, map[string]any{"maxPods": int64(500), "nodeStatusMaxImages": int64(-1)}, "spec", "kubeletConfig")).To(Succeed())
		})
		reconciledSince(poke())
		for _, n := range []string{theirSwap, theirPSI, theirPCI} {
			Expect(get(mcGVK, "", n)).NotTo(BeNil(), "beside it, nothing of its is deleted")
		}

		// The handover, with the window closed: nothing that rolls a pool.
		opensAt := closedWindow("admin")
		mark := requests.mark()
		reconciledSince(setSwitch(""))
		reconciledSince(poke())
		for _, w := range writes(requests.since(mark)) {
			Expect(w).NotTo(Or(ContainSubstring("machineconfigs"), ContainSubstring("kubeletconfigs")), "staged to the window")
		}
		Expect(get(mcGVK, "", theirSwap)).NotTo(BeNil())
		Expect(get(kcGVK, "", theirKC)).NotTo(BeNil())

		// The window opens: its objects go, in one pass (MCO renders the
		// writes of one pass together).
		logMark := len(logs.find(map[string]string{"action": "delete"}))
		clockShift.Store(int64(time.Until(opensAt) + time.Minute))
		poke()
		for _, n := range []string{theirSwap, theirPSI} {
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", n) }).Should(BeNil(), n)
		}
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", theirKC) }).Should(BeNil())
		passes := map[string]bool{}
		for _, e := range logs.find(map[string]string{"action": "delete"})[logMark:] {
			o := fmt.Sprint(e["object"])
			if strings.HasSuffix(o, "/"+theirSwap) || strings.HasSuffix(o, "/"+theirPSI) || strings.HasSuffix(o, "/"+theirKC) {
				passes[fmt.Sprint(e["reconcileID"])] = true
			}
		}
		Expect(passes).To(HaveLen(1), "every deletion of its objects in one pass")
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=1"}), "psi=1 stays, from this one's object")
		Expect(get(mcGVK, "", swapMC)).NotTo(BeNil())

		// The paused one is kept, and says why.
		Expect(get(mcGVK, "", theirPCI)).NotTo(BeNil())
		Eventually(func() string {
			for _, t := range rec.Snapshot().Tombstones {
				if t.Tombstone.Object.GetName() == theirPCI {
					return string(t.Status) + ": " + t.Reason
				}
			}
			return ""
		}).Should(And(HavePrefix(string(tombstone.Skipped)), ContainSubstring(annotations.ShippedPaused)))
	})
}
