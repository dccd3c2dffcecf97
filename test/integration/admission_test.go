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
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/admission"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
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

// asAutopilot is a client acting as the autopilot's ServiceAccount.
func asAutopilot() client.Client {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNamespace + ":virt-platform-autopilot"}
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
		err := sa.Create(ctx, kc("master", map[string]any{"maxPods": int64(500), "authorization": map[string]any{"mode": "Webhook"}}), client.DryRunAll)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "the catalog's KubeletConfig as rendered: %v", err)

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
		Expect(sa.Patch(ctx, swap.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`)), client.DryRunAll)).To(Succeed())
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
		Expect(os.Setenv(env, "quay.io/kubevirt/kubevirt-metrics-exporter:probe")).To(Succeed())
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

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
