package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
)

const loadAware = "platform.kubevirt.io/enable-loadaware"

var _ = Describe("Autopilot", Ordered, func() {
	ctx := context.Background()

	BeforeAll(func() {
		h := newObj(hcoGVK, hcoNamespace, hcoName)
		Expect(unstructured.SetNestedField(h.Object, int64(1), "spec", "virtualization", "liveMigrationConfig", "parallelOutboundMigrationsPerNode")).To(Succeed())
		Expect(k8s.Create(ctx, h, client.FieldOwner("hco-operator"))).To(Succeed())
		startManager()
	})

	It("converges a fresh cluster: golden HCO, swap and PSI MachineConfigs, no opt-in assets", func() {
		Eventually(func() int64 {
			return nestedInt(hco(), "spec", "virtualization", "liveMigrationConfig", "parallelOutboundMigrationsPerNode")
		}).Should(Equal(int64(2)))
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", swapMC) }).ShouldNot(BeNil())

		swap := get(mcGVK, "", swapMC)
		Expect(swap.GetLabels()).To(HaveKeyWithValue(annotations.ManagedByLabel, annotations.ManagedByValue))
		Expect(swap.GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", "worker"))
		files, _, _ := unstructured.NestedSlice(swap.Object, "spec", "config", "storage", "files")
		Expect(files).To(ContainElement(HaveKeyWithValue("path", "/etc/openshift/kubelet.conf.d/90-swap.conf")))
		Expect(hco().GetLabels()).To(HaveKeyWithValue(annotations.ManagedByLabel, annotations.ManagedByValue))

		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Inactive))
		Expect(get(mcGVK, "", "99-master-kubevirt-psi-karg")).To(BeNil(), "masters are not schedulable")

		// Each creation is its own Event on the HCO and its own log line:
		// the events API must not fold them into one series named after the first.
		for _, name := range []string{psiMC, swapMC} {
			Eventually(func() int { return len(events("Created", name)) }).Should(BeNumerically(">", 0), name)
			Expect(logs.find(map[string]string{"action": "create", "object": "MachineConfig.machineconfiguration.openshift.io/" + name})).To(HaveLen(1), name)
			// A MachineConfig write rolls its pool: the HCO says so, naming it.
			Eventually(func() int { return len(events("PoolRollout", name, "MachineConfigPool worker rolls")) }).Should(BeNumerically(">", 0), name)
		}
	})

	It("costs no API request once converged", func() {
		mc := get(mcGVK, "", psiMC)
		Expect(outcomeAt("psi-enable", mc.GetResourceVersion()).Outcome).To(Equal(engine.Unchanged))
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Unchanged))
		Eventually(outcomeOf("swap-enable")).Should(Equal(engine.Unchanged))

		mark := requests.mark()
		Expect(mark).To(BeNumerically(">", 0), "the log sees the manager's requests (its initial lists and applies)")
		rv := poke() // a full reconcile of every asset
		Expect(outcomeAt("hco-golden-config", rv).Outcome).To(Equal(engine.Unchanged))
		// Wait for that whole reconcile to finish, not only its first asset.
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		Expect(requests.since(mark)).To(BeEmpty(), "a reconcile with no drift must be served from the watch caches")
		Expect(get(mcGVK, "", psiMC).GetResourceVersion()).To(Equal(mc.GetResourceVersion()))

		// Nor an Event: a warning that stands was told once. Events go out
		// asynchronously and in order, so a marker Event recorded after the
		// reconciles shows that every earlier one has arrived.
		marker := func(key string) {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, "platform.kubevirt.io/steady-marker-a", "")
				setAnnotation(u, "platform.kubevirt.io/steady-marker-b", "")
				// An asset that waits with no object (no storage class
				// offers ReadWriteMany): its warning stands throughout.
				setAnnotation(u, "platform.kubevirt.io/enable-sbr-detection", "")
				if key != "" {
					setAnnotation(u, "platform.kubevirt.io/enable-sbr-detection", "true")
					setAnnotation(u, "platform.kubevirt.io/"+key, "x")
				}
			})
			if key != "" {
				Eventually(func() []eventsv1.Event { return events("UnknownAnnotation", key) }).ShouldNot(BeEmpty())
			}
		}
		DeferCleanup(func() {
			marker("")
			// The switch off is a change of the fleet status: let it be
			// written before the next spec counts requests.
			Eventually(outcomeOf("sbr-detect-only")).ShouldNot(Equal(engine.MissingDependency))
			reconciledSince(poke())
		})
		marker("steady-marker-a")
		Eventually(outcomeOf("sbr-detect-only")).Should(Equal(engine.MissingDependency))
		Eventually(func() []eventsv1.Event { return events("MissingDependency", "sbr-detect-only") }).ShouldNot(BeEmpty())
		seen := map[string]string{}
		for _, e := range events("") {
			seen[e.Name] = e.ResourceVersion
		}
		for i := 0; i < 3; i++ {
			rv := poke()
			Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		}
		marker("steady-marker-b")
		for _, e := range events("") {
			if strings.Contains(e.Note, "steady-marker") {
				continue
			}
			Expect(seen).To(HaveKeyWithValue(e.Name, e.ResourceVersion), "an Event recorded by a reconcile with nothing to do: %s %s", e.Reason, e.Note)
		}
	})

	It("reverts a manual edit of a managed field", func() {
		mark := requests.mark()
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		// Another manager changed a field the autopilot owns: the verdict is
		// certain, so the repair is exactly one request (no dry-run, no read).
		rv := poke()
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		Expect(requests.since(mark)).To(Equal([]string{"PATCH /apis/machineconfiguration.openshift.io/v1/machineconfigs/" + psiMC}))
		Eventually(func() int { return len(events("DriftCorrected", psiMC)) }).Should(BeNumerically(">", 0))

		// The admin's log: one info line naming the object, the action and the field.
		lines := logs.find(map[string]string{"action": "correct", "object": "MachineConfig.machineconfiguration.openshift.io/" + psiMC, "asset": "psi-enable", "level": "info"})
		Expect(lines).To(HaveLen(1))
		Expect(lines[0]["fields"]).To(ContainElement(ContainSubstring("kernelArguments")))
		// A constant message, the object as structured values: aggregatable.
		Expect(lines[0]["msg"]).To(Equal("drift corrected"))
		Expect(lines[0]["objectRef"]).To(Equal(map[string]any{"kind": "MachineConfig", "namespace": "", "name": psiMC}))
	})

	It("applies the patch annotation of a managed object, and renders the other assets from the patched HCO", func() {
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Patch, `[{"op":"replace","path":"/spec/virtualization/liveMigrationConfig/parallelMigrationsPerCluster","value":8}]`)
		})
		Eventually(func() int64 {
			return nestedInt(hco(), "spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster")
		}).Should(Equal(int64(8)))
		// Nobody else changed the field: what the autopilot renders did, so
		// the write is an update, not a drift correction (the managedFields
		// on the real API server tell them apart).
		Eventually(func() int { return len(events("Updated", "parallelMigrationsPerCluster")) }).Should(BeNumerically(">", 0))
		Expect(logs.find(map[string]string{"action": "update", "asset": "hco-golden-config", "level": "info"})).NotTo(BeEmpty())
	})

	It("keeps an invalid patch from touching its object, reports it, and converges everything else", func() {
		rv := update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Patch, `[{"op":"replace","path":"/metadata/name","value":"x"}]`)
			Expect(unstructured.SetNestedField(u.Object, true, "spec", "fips")).To(Succeed())
		})
		s := outcomeAt("swap-enable", rv)
		Expect(s.Outcome).To(Equal(engine.Invalid))
		Expect(s.Reason).To(ContainSubstring("protected"))
		Eventually(func() int { return len(events("InvalidPatch", swapMC, annotations.Patch)) }).Should(BeNumerically(">", 0))
		Expect(testutil.ToFloat64(metrics.InvalidAnnotation.WithLabelValues("MachineConfig", "", swapMC, annotations.Patch, "protected_path"))).To(Equal(1.0))

		// Untouched: same resourceVersion, the user's edit still there.
		swap := get(mcGVK, "", swapMC)
		Expect(swap.GetResourceVersion()).To(Equal(rv))
		fips, _, _ := unstructured.NestedBool(swap.Object, "spec", "fips")
		Expect(fips).To(BeTrue())

		// Every other asset still converges.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))

		// Fixing the annotation converges the object (fips is not ours: it
		// stays). A valid patch, within what the admission policy admits
		// on a MachineConfig (its content is the catalog's: docs/security.md).
		update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Patch, `[{"op":"add","path":"/metadata/labels/machineconfiguration.openshift.io~1role","value":"worker"}]`)
		})
		Eventually(outcomeOf("swap-enable")).Should(Equal(engine.Unchanged))
		Expect(seriesWith(metrics.InvalidAnnotation, "name", swapMC)).To(Equal(0))
	})

	It("keeps ignore-fields values whoever set them, across reconciles and restarts, and hands them back when unmasked", func() {
		field := []string{"spec", "virtualization", "liveMigrationConfig", "parallelOutboundMigrationsPerNode"}
		rv := update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.IgnoreFields, "/spec/virtualization/liveMigrationConfig/parallelOutboundMigrationsPerNode")
			Expect(unstructured.SetNestedField(u.Object, int64(4), field...)).To(Succeed())
		})
		Expect(outcomeAt("hco-golden-config", rv).Outcome).To(Equal(engine.Unchanged))
		Expect(nestedInt(hco(), field...)).To(Equal(int64(4)))

		stopManager()
		startManager()
		Expect(outcomeAt("hco-golden-config", rv).Outcome).To(Equal(engine.Unchanged))
		Expect(nestedInt(hco(), field...)).To(Equal(int64(4)))

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.IgnoreFields, "")
		})
		Eventually(func() int64 { return nestedInt(hco(), field...) }).Should(Equal(int64(2)))
	})

	It("never touches an object annotated unmanaged", func() {
		rv := update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, annotations.ModeUnmanaged)
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Expect(outcomeAt("psi-enable", rv).Outcome).To(Equal(engine.Unmanaged))
		Expect(get(mcGVK, "", psiMC).GetResourceVersion()).To(Equal(rv))
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))

		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, "")
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
	})

	It("skips an asset whose CRD is missing, then starts it when the CRD is installed, without a restart", func() {
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, loadAware, "true")
		})
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.MissingDependency))
		Expect(testutil.ToFloat64(metrics.MissingDependency.WithLabelValues("descheduler-loadaware", "KubeDescheduler"))).To(Equal(1.0))
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Unchanged), "the rest still converges")

		installCRD(ctx, deschedulerCRD("4-21"))
		Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).ShouldNot(BeNil())
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		Expect(seriesWith(metrics.MissingDependency, "asset", "descheduler-loadaware")).To(Equal(0))

		// Watched now: a manual edit is reverted.
		update(kdGVK, deschedulerNamespace, "cluster", "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, int64(3600), "spec", "deschedulingIntervalSeconds")).To(Succeed())
		})
		Eventually(func() int64 {
			return nestedInt(get(kdGVK, deschedulerNamespace, "cluster"), "spec", "deschedulingIntervalSeconds")
		}).Should(Equal(int64(60)))
		// Eviction limits follow the effective (patched) HCO.
		kd := get(kdGVK, deschedulerNamespace, "cluster")
		Expect(nestedInt(kd, "spec", "evictionLimits", "total")).To(Equal(int64(8)))
	})

	DescribeTable("picks the best descheduler profile the installed operator offers",
		func(release, profile string, nodeLimit bool) {
			removeCRD(ctx, "kubedeschedulers.operator.openshift.io")
			Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.MissingDependency))
			installCRD(ctx, deschedulerCRD(release))
			Eventually(func() []any {
				kd := get(kdGVK, deschedulerNamespace, "cluster")
				if kd == nil {
					return nil
				}
				p, _, _ := unstructured.NestedSlice(kd.Object, "spec", "profiles")
				return p
			}).Should(Equal([]any{profile}))
			kd := get(kdGVK, deschedulerNamespace, "cluster")
			_, hasNode, _ := unstructured.NestedFieldNoCopy(kd.Object, "spec", "evictionLimits", "node")
			Expect(hasNode).To(Equal(nodeLimit))
			Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		},
		Entry("OCP 4.17: LongLifecycle, total limit only", "4-17", "LongLifecycle", false),
		Entry("OCP 4.19: DevKubeVirtRelieveAndMigrate", "4-19", "DevKubeVirtRelieveAndMigrate", false),
		Entry("OCP 4.21: KubeVirtRelieveAndMigrate with a per-node limit", "4-21", "KubeVirtRelieveAndMigrate", true),
	)

	It("removes an opt-in asset's object when it is turned off", func() {
		Expect(get(kdGVK, deschedulerNamespace, "cluster")).NotTo(BeNil())
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, loadAware, "false")
		})
		Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Inactive))
	})

	It("never creates what disabled-resources lists, reports malformed entries and still honours the rest", func() {
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisabledResources, "KubeDescheduler/openshift-kube-*/clus*, not-an-entry")
			setAnnotation(u, loadAware, "true")
		})
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Excluded))
		Eventually(func() int { return len(events("InvalidDisabledResources", "not-an-entry")) }).Should(BeNumerically(">", 0))
		Expect(get(kdGVK, deschedulerNamespace, "cluster")).To(BeNil())
		// The malformed entry may have meant a node object: what reboots a
		// pool is left as it is until the entry is fixed. A person's edit
		// of the psi MachineConfig is not corrected (that write would roll
		// the pool), and the hold names the entry.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Invalid))
		Expect(status("psi-enable").Reason).To(ContainSubstring("not-an-entry"))
		Eventually(func() int { return len(events("InvalidDisabledResources", psiMC)) }).Should(BeNumerically(">", 0))
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisabledResources, "")
			setAnnotation(u, loadAware, "")
		})
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Inactive))
		// Fixed: the held correction goes.
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
	})

	It("honours the opt-out of an object it did not create (a cache miss is not an absence), adopts it when the opt-out goes, and never deletes it", func() {
		pre := newObj(kdGVK, deschedulerNamespace, "cluster")
		pre.SetAnnotations(map[string]string{annotations.Mode: annotations.ModeUnmanaged})
		Expect(unstructured.SetNestedStringSlice(pre.Object, []string{"AffinityAndTaints"}, "spec", "profiles")).To(Succeed())
		Expect(k8s.Create(ctx, pre, client.FieldOwner("admin"))).To(Succeed())
		rv := pre.GetResourceVersion()

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, loadAware, "true")
		})
		Expect(outcomeAt("descheduler-loadaware", rv).Outcome).To(Equal(engine.Unmanaged))
		kd := get(kdGVK, deschedulerNamespace, "cluster")
		Expect(kd.GetResourceVersion()).To(Equal(rv), "untouched")
		Expect(kd.GetLabels()).NotTo(HaveKey(annotations.ManagedByLabel))

		update(kdGVK, deschedulerNamespace, "cluster", "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, "")
		})
		// Adopted: labelled, and the admin's compatible profile kept.
		Eventually(func() []any {
			p, _, _ := unstructured.NestedSlice(get(kdGVK, deschedulerNamespace, "cluster").Object, "spec", "profiles")
			return p
		}).Should(Equal([]any{"AffinityAndTaints", "KubeVirtRelieveAndMigrate"}))
		Expect(get(kdGVK, deschedulerNamespace, "cluster").GetLabels()).To(HaveKeyWithValue(annotations.ManagedByLabel, annotations.ManagedByValue))

		Expect(get(kdGVK, deschedulerNamespace, "cluster").GetAnnotations()).To(HaveKeyWithValue(annotations.Adopted, "true"))

		// Turned off: an adopted object is not provably the autopilot's
		// creation, so it stays (the admin's again, no longer written).
		rv = update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, loadAware, "")
		})
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		Expect(status("descheduler-loadaware").Outcome).To(Equal(engine.Inactive))
		Expect(status("descheduler-loadaware").Reason).To(ContainSubstring("adopted"))
		Expect(get(kdGVK, deschedulerNamespace, "cluster")).NotTo(BeNil())
		Expect(k8s.Delete(ctx, get(kdGVK, deschedulerNamespace, "cluster"))).To(Succeed())
	})

	It("deletes a tombstoned object only when it is provably the autopilot's", func() {
		const old = "50-swap-enable"
		foreign := newObj(mcGVK, "", old)
		foreign.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
		Expect(unstructured.SetNestedStringSlice(foreign.Object, []string{"nosmt"}, "spec", "kernelArguments")).To(Succeed())
		// Carries the label (copied by someone) but was never applied by the autopilot.
		Expect(k8s.Create(ctx, foreign, client.FieldOwner("someone-else"))).To(Succeed())
		poke()
		Eventually(func() int { return len(events("TombstoneSkipped", old)) }).Should(BeNumerically(">", 0))
		Expect(get(mcGVK, "", old)).NotTo(BeNil())
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())

		ours := newObj(mcGVK, "", old)
		ours.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
		Expect(unstructured.SetNestedStringSlice(ours.Object, []string{"nosmt"}, "spec", "kernelArguments")).To(Succeed())
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(ours), client.FieldOwner(annotations.FieldManager))).To(Succeed())
		poke()
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", old) }).Should(BeNil())
		Eventually(func() int { return len(events("TombstoneDeleted", old)) }).Should(BeNumerically(">", 0))
	})

	It("deletes an earlier release's KubeletConfig with the write of the one that carries its settings now, never before it", func() {
		requireVendorCRDs()
		const oldKC, ourKC, admin = "kubevirt-worker-cpu-manager", "kubevirt-kubelet-worker", "carried-admin-tuning"
		if workerPoolAtRest(ctx) {
			// Left as it was: a pool decides which nodes' facts each pool's
			// objects render from, for the specs that follow.
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, newObj(mcGVK.GroupVersion().WithKind("MachineConfigPool"), "", "worker")))).To(Succeed())
				untilSettled()
			})
		}
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
		selectWorker := map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}

		// The carrier cannot write: an admin's KubeletConfig holds the pool.
		adminKC := newObj(kcGVK, "", admin)
		Expect(unstructured.SetNestedField(adminKC.Object, selectWorker, "spec", "machineConfigPoolSelector")).To(Succeed())
		Expect(unstructured.SetNestedField(adminKC.Object, map[string]any{"maxPods": int64(300)}, "spec", "kubeletConfig")).To(Succeed())
		Expect(k8s.Create(ctx, adminKC)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, newObj(kcGVK, "", admin)))).To(Succeed()) })
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Conflict))
		// A cluster as an earlier release left it: its per-feature
		// KubeletConfig, not yet the per-pool one.
		Expect(k8s.Delete(ctx, get(kcGVK, "", ourKC))).To(Succeed())
		old := newObj(kcGVK, "", oldKC)
		old.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
		Expect(unstructured.SetNestedField(old.Object, selectWorker, "spec", "machineConfigPoolSelector")).To(Succeed())
		Expect(unstructured.SetNestedField(old.Object, map[string]any{"cpuManagerPolicy": "static", "cpuManagerReconcilePeriod": "5s"}, "spec", "kubeletConfig")).To(Succeed())
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(old), client.FieldOwner(annotations.FieldManager))).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, newObj(kcGVK, "", oldKC)))).To(Succeed()) })

		deletes := func(mark int) (kc, oldDeleted int) {
			for i, r := range requests.since(mark) {
				switch {
				case strings.HasSuffix(r, "/kubeletconfigs/"+ourKC) && !strings.HasPrefix(r, "GET") && !strings.HasSuffix(r, "(dry-run)") && kc == 0:
					kc = i + 1
				case r == "DELETE /apis/machineconfiguration.openshift.io/v1/kubeletconfigs/"+oldKC && oldDeleted == 0:
					oldDeleted = i + 1
				}
			}
			return kc, oldDeleted
		}
		mark := requests.mark()
		reconciledAt(poke())
		reconciledAt(poke())
		Expect(get(kcGVK, "", oldKC)).NotTo(BeNil(), "its carrier cannot write: the old KubeletConfig stays, the pool keeps its settings")
		_, deleted := deletes(mark)
		Expect(deleted).To(BeZero())
		Eventually(func() int { return len(events("TombstoneSkipped", "asset kubelet-worker")) }).Should(BeNumerically(">", 0), "the wait is said, naming the carrier")

		// The admin's KubeletConfig goes: the carrier is written, and the
		// old one deleted with it, in the same pass (MCO renders once).
		mark = requests.mark()
		Expect(k8s.Delete(ctx, get(kcGVK, "", admin))).To(Succeed())
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", oldKC) }).Should(BeNil())
		Expect(get(kcGVK, "", ourKC)).NotTo(BeNil())
		written, deleted := deletes(mark)
		Expect(written).To(BeNumerically(">", 0), "the carrier was written")
		Expect(deleted).To(BeNumerically(">", written), "the old one deleted after its carrier's write, not before")
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
	})

	It("reads nodes through the real manager cache: schedulable masters get their own PSI MachineConfig", func() {
		const masterMC = "99-master-kubevirt-psi-karg"
		Expect(get(mcGVK, "", masterMC)).To(BeNil())
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-0", Labels: map[string]string{
			"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/worker": "",
		}}}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, n)).To(Succeed()) })
		// OpenShift's Scheduler says so (the admission policy reads it:
		// without it no master MachineConfig is admitted).
		schedulable := func(on bool) {
			update(schedulerGVK, "", "cluster", "admin", func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedField(u.Object, on, "spec", "mastersSchedulable")).To(Succeed())
			})
		}
		schedulable(true)
		DeferCleanup(func() { schedulable(false) })
		Eventually(func() []any { return kernelArgs(masterMC) }).Should(Equal([]any{"psi=1"}))
		Expect(outcomeOf("psi-enable-master")()).NotTo(Equal(engine.Refused))
		Expect(get(mcGVK, "", masterMC).GetLabels()).To(HaveKeyWithValue("machineconfiguration.openshift.io/role", "master"))
	})

	It("stops a field fight within its write budget, names the opponent, and resumes when the fight stops", func() {
		before := testutil.ToFloat64(metrics.CorrectiveWrites.WithLabelValues("MachineConfig", "", psiMC))
		var reverts atomic.Int32
		fight := func() bool {
			if len(events("Thrashing", psiMC)) > 0 {
				return true
			}
			args := kernelArgs(psiMC)
			if len(args) == 1 && args[0] == "psi=1" {
				update(mcGVK, "", psiMC, "opponent-operator", func(u *unstructured.Unstructured) {
					Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
				})
				reverts.Add(1)
			}
			return false
		}
		Eventually(fight).WithTimeout(60 * time.Second).Should(BeTrue())

		ev := events("Thrashing", psiMC)[0]
		Expect(ev.Note).To(ContainSubstring("opponent-operator"))
		Expect(ev.Note).To(ContainSubstring("/spec/kernelArguments"))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Throttled))
		Expect(testutil.ToFloat64(metrics.Throttled.WithLabelValues("MachineConfig", "", psiMC, "opponent-operator"))).To(Equal(1.0))

		writes := testutil.ToFloat64(metrics.CorrectiveWrites.WithLabelValues("MachineConfig", "", psiMC)) - before
		// Burst plus the refills that fit in the fight's duration: far
		// below one write per revert in a hot loop.
		Expect(writes).To(BeNumerically("<=", float64(testThrottle.Burst+2)), "writes=%v reverts=%d", writes, reverts.Load())

		// The opponent gave up: the autopilot converges by itself.
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(30 * time.Second).Should(Equal([]any{"psi=1"}))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})

	safetySpecs(ctx)
	settleSpecs(ctx)
	factBudgetSpecs(ctx)
	nodeEventSpecs(ctx)
	deletionSpecs(ctx)
	vocabularySpecs(ctx)
	invariantSpecs(ctx)
	operabilitySpecs(ctx)
	previewSpecs(ctx)
	gateSpecs(ctx)
	consoleSpecs(ctx)
	shippedSpecs(ctx)
	loggingSpecs(ctx)
	dropInSpecs(ctx)
	featureSpecs(ctx)
	fleetSpecs(ctx)
	factsSpecs(ctx)
	credentialSpecs(ctx)
	admissionSpecs(ctx)
	deputySpecs(ctx)
	tlsSpecs(ctx)
	hcoLifecycleSpecs(ctx)
	lateHCOSpecs(ctx)
	pacingSpecs(ctx)
	faultSpecs(ctx)
	unlistableSpecs(ctx)
})

// poke changes an HCO annotation so the autopilot reconciles now.
func poke() string {
	return update(hcoGVK, hcoNamespace, hcoName, "test-poke", func(u *unstructured.Unstructured) {
		n := u.GetAnnotations()["test/poke"]
		setAnnotation(u, "test/poke", n+"x")
	})
}
