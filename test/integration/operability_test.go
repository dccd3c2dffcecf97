package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
	"github.com/kubevirt/virt-platform-autopilot/pkg/debug"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// operabilitySpecs run inside the ordered suite, on its converged cluster.
func operabilitySpecs(ctx context.Context) {
	It("makes the same decisions in the controller, the render CLI (live and offline) and the debug endpoints", func() {
		// Offline has no live objects besides the HCO: take the earlier
		// specs' patch off the swap MachineConfig first.
		update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Patch, "")
		})
		// Converged first: an earlier spec may have removed and re-installed
		// a CRD, and that kind's watch comes back after client-go's list
		// backoff (seconds), its assets Failed until then.
		Eventually(func(g Gomega) {
			g.Expect(outcomeAt("hco-golden-config", poke()).Outcome).To(Equal(engine.Unchanged))
			for _, s := range rec.Snapshot().Assets {
				g.Expect(s.Outcome).NotTo(BeElementOf(engine.Applied, engine.Failed, engine.Throttled), "converged before comparing: %+v", s)
			}
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		dir := GinkgoT().TempDir()
		live := runCLI(0, "--kubeconfig", writeKubeconfig(dir), "--namespace", hcoNamespace, "--output", "json", "--show-excluded")
		sameAsController(live, "live render")

		offline := runCLI(0, offlineInputs(ctx, dir)...)
		sameAsController(offline, "offline render")

		req := httptest.NewRequest(http.MethodGet, "/debug/render?format=json&show-excluded=true", nil)
		w := httptest.NewRecorder()
		(&debug.Server{Catalog: embedded(), Source: rec}).Handler().ServeHTTP(w, req)
		Expect(w.Code).To(Equal(http.StatusOK))
		var views []debug.AssetView
		Expect(json.Unmarshal(w.Body.Bytes(), &views)).To(Succeed())
		var fromDebug []preview.Entry
		for _, v := range views {
			fromDebug = append(fromDebug, preview.Entry{Asset: v.Asset, Status: v.Status, Object: v.Desired})
			Expect(v.Last).NotTo(BeNil(), "debug shows the controller's last outcome for %s", v.Asset)
		}
		sameAsController(fromDebug, "debug endpoint")

		// The features view: /debug/features and render --output features
		// say the same about every feature.
		req = httptest.NewRequest(http.MethodGet, "/debug/features?format=json", nil)
		w = httptest.NewRecorder()
		(&debug.Server{Catalog: embedded(), Source: rec}).Handler().ServeHTTP(w, req)
		Expect(w.Code).To(Equal(http.StatusOK))
		var fromEndpoint []features.Status
		Expect(json.Unmarshal(w.Body.Bytes(), &fromEndpoint)).To(Succeed())
		Expect(fromEndpoint).To(HaveLen(len(embedded().Features)))
		table := runCLI(0, "--kubeconfig", writeKubeconfig(dir), "--namespace", hcoNamespace, "--output", "features")
		for _, f := range fromEndpoint {
			Expect(table).To(MatchRegexp(`(?m)^%s\s+%s\s+\S+\s+%s\s`, f.Name, f.Maturity, f.State), "feature %s", f.Name)
		}
	})

	It("answers /healthz and /readyz once its caches have synced", func() {
		for _, path := range []string{"/healthz", "/readyz"} {
			Eventually(func() int {
				resp, err := http.Get("http://" + probeAddr + path)
				if err != nil {
					return 0
				}
				defer func() { _ = resp.Body.Close() }()
				return resp.StatusCode
			}).Should(Equal(http.StatusOK), path)
		}
	})

	It("serves metrics only to callers the API server authenticates and authorizes", func() {
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
		scrape := func(token string) int {
			req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
			Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := insecure.Do(req)
			if err != nil {
				return 0
			}
			defer func() { _ = resp.Body.Close() }()
			return resp.StatusCode
		}
		Eventually(func() int { return scrape("") }).Should(Equal(http.StatusUnauthorized))

		token := func(name string) string {
			sa := &corev1.ServiceAccount{ObjectMeta: metaName(name)}
			sa.Namespace = hcoNamespace
			Expect(k8s.Create(ctx, sa)).To(Succeed())
			tr := &authenticationv1.TokenRequest{}
			Expect(k8s.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
			return tr.Status.Token
		}
		Eventually(func() int { return scrape(token("nosy")) }).Should(Equal(http.StatusForbidden), "authenticated but not authorized")

		// Bound before its first scrape: denials are cached for 30s.
		reader := &rbacv1.ClusterRole{}
		readYAML(filepath.Join(repoRoot(), "config", "rbac", "metrics_reader_role.yaml"), reader)
		Expect(k8s.Create(ctx, reader)).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metaName("prometheus-reads-autopilot"),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: hcoNamespace}},
		})).To(Succeed())
		prometheus := token("prometheus-k8s")
		// The API server's RBAC cache may lag the binding; a denial is cached 30s.
		Eventually(func() int { return scrape(prometheus) }).WithTimeout(90 * time.Second).Should(Equal(http.StatusOK))
	})

	It("previews with a server-side dry-run what a reconcile would change, with kubectl-diff exit codes", func() {
		kc := writeKubeconfig(GinkgoT().TempDir())
		Expect(runCLI(0, "--kubeconfig", kc, "--namespace", hcoNamespace, "--output", "diff")).To(ContainSubstring("Disruption: none"))

		stopManager()
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		old := newObj(mcGVK, "", "50-swap-enable")
		old.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(old), client.FieldOwner(annotations.FieldManager))).To(Succeed())
		// Left over from an opt-in asset that is off now (as if turned off while the autopilot was down).
		leftover := newObj(kdGVK, deschedulerNamespace, "cluster")
		leftover.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
		leftover.SetAnnotations(map[string]string{annotations.Asset: "descheduler-loadaware"})
		Expect(unstructured.SetNestedField(leftover.Object, int64(60), "spec", "deschedulingIntervalSeconds")).To(Succeed())
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(leftover), client.FieldOwner(annotations.FieldManager))).To(Succeed())

		out := runCLI(1, "--kubeconfig", kc, "--namespace", hcoNamespace, "--output", "diff")
		Expect(out).To(ContainSubstring("MachineConfig.machineconfiguration.openshift.io/" + psiMC + " changed"))
		Expect(out).To(ContainSubstring("-  - psi=0"))
		Expect(out).To(ContainSubstring("+  - psi=1"))
		Expect(out).To(ContainSubstring("MachineConfig.machineconfiguration.openshift.io/50-swap-enable deleted"))
		Expect(out).To(ContainSubstring("KubeDescheduler.operator.openshift.io/" + deschedulerNamespace + "/cluster deleted (asset turned off"))
		Expect(out).To(ContainSubstring("MachineConfig.machineconfiguration.openshift.io/" + swapMC + " unchanged"))
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "a diff writes nothing")
		// It ends with what applying would do to nodes, by pool.
		Expect(out).To(ContainSubstring("Disruption: applying reboots nodes"))
		Expect(out).To(MatchRegexp(`pool worker: MachineConfig\.machineconfiguration\.openshift\.io/` + psiMC + ` changed.*\n    \d+ node\(s\) \(.*\), 0 VMI\(s\) live-migrate`))

		startManager()
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", "50-swap-enable") }).Should(BeNil())
		Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
		Eventually(func() int {
			var o, e bytes.Buffer
			return cluster.Render([]string{"--kubeconfig", kc, "--namespace", hcoNamespace, "--output", "diff"}, &o, &e)
		}).Should(Equal(0))
	})

	It("pauses on platform.kubevirt.io/autopilot=false, then manages only the assets listed, then everything", func() {
		setSwitch := func(v string) string {
			return update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, v) })
		}
		rv := setSwitch("false")
		reconciledAt(rv)
		Expect(rec.Snapshot().Health.Idle).NotTo(BeNil())
		Expect(rec.Snapshot().Health.Idle.Reason).To(Equal(report.IdlePaused))
		Eventually(func() int { return len(events("Paused", annotations.Autopilot+`="false"`)) }).Should(Equal(1))
		// A hub reads it as idle, never as the last features it managed.
		Eventually(func() []string {
			d := statusData()
			return []string{d[fleetstatus.KeyAutopilot], d[fleetstatus.KeyIdleReason], d[fleetstatus.KeyHealthy]}
		}).Should(Equal([]string{fleetstatus.Idle, string(report.IdlePaused), "false"}))

		mark := requests.mark()
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		reconciledAt(poke())
		Expect(status("psi-enable").Outcome).To(Equal(engine.Paused))
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "paused: nothing is written")
		Expect(writes(requests.since(mark))).To(BeEmpty(), "paused: no write, no delete")
		Expect(len(events("Paused", annotations.Autopilot+`="false"`))).To(Equal(1), "one Event per pause")

		// Only the listed asset: psi is corrected, swap left as it is.
		update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, "3.3.0", "spec", "config", "ignition", "version")).To(Succeed())
		})
		// An entry naming nothing known is reported and ignored.
		reconciledAt(setSwitch("psi-enable, no-such-asset"))
		Eventually(func() int { return len(events("InvalidAutopilot", "no-such-asset")) }).Should(Equal(1))
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Expect(rec.Snapshot().Health.Idle).To(BeNil())
		Eventually(outcomeOf("swap-enable")).Should(Equal(engine.Paused))
		v, _, _ := unstructured.NestedString(get(mcGVK, "", swapMC).Object, "spec", "config", "ignition", "version")
		Expect(v).To(Equal("3.3.0"), "an asset not listed is left exactly as it is")

		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			delete(a, annotations.Autopilot)
			u.SetAnnotations(a)
		})
		Eventually(func() string {
			v, _, _ := unstructured.NestedString(get(mcGVK, "", swapMC).Object, "spec", "config", "ignition", "version")
			return v
		}).ShouldNot(Equal("3.3.0"), "without the switch everything is managed again")
	})

	It("never applies its KubeletConfig over another one selecting the same pool, and says what to do", func() {
		requireVendorCRDs()
		const ours = "kubevirt-kubelet-worker"
		Eventually(func() *unstructured.Unstructured { return get(kcGVK, "", ours) }).ShouldNot(BeNil())
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
		before := get(kcGVK, "", ours).GetResourceVersion()

		// The usual recipe: a label on the pool, selected by the admin's
		// KubeletConfig. The clash is judged against the pool's live labels.
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "machineconfigpool-crd.yaml")))
		pool := newObj(kcGVK.GroupVersion().WithKind("MachineConfigPool"), "", "worker")
		pool.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": "", "custom-kubelet": "large-pods"})
		Expect(unstructured.SetNestedField(pool.Object, map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}}, "spec", "machineConfigSelector")).To(Succeed())
		// As OpenShift's worker pool selects its nodes.
		Expect(unstructured.SetNestedField(pool.Object, map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/worker": ""}}, "spec", "nodeSelector")).To(Succeed())
		Expect(k8s.Create(ctx, pool)).To(Succeed())
		setPoolState(ctx, "worker", false) // MCO reports it at rest
		admin := newObj(kcGVK, "", "admin-worker-tuning")
		Expect(unstructured.SetNestedField(admin.Object, map[string]any{
			"matchLabels": map[string]any{"custom-kubelet": "large-pods"}}, "spec", "machineConfigPoolSelector")).To(Succeed())
		Expect(unstructured.SetNestedField(admin.Object, map[string]any{"maxPods": int64(300)}, "spec", "kubeletConfig")).To(Succeed())
		Expect(k8s.Create(ctx, admin)).To(Succeed())

		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Conflict))
		Expect(status("kubelet-worker").Reason).To(ContainSubstring("admin-worker-tuning"))
		// One Event on the KubeletConfig and one on the HCO, not one per reconcile.
		conflicts := func() int { return len(events("Conflict", "admin-worker-tuning", annotations.DisabledResources)) }
		Eventually(conflicts).Should(Equal(2))
		rv := poke()
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		Expect(conflicts()).To(Equal(2))
		Expect(get(kcGVK, "", ours).GetResourceVersion()).To(Equal(before), "the autopilot's KubeletConfig is left as it is")

		Expect(k8s.Delete(ctx, admin)).To(Succeed())
		Eventually(outcomeOf("kubelet-worker")).Should(Equal(engine.Unchanged))
	})

	It("never applies its NodeHealthCheck over an admin's on the same nodes, judged as NHC selects them", func() {
		requireVendorCRDs()
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "remediation", "nodehealthchecks.remediation.medik8s.io.yaml")))
		nhcGVK := rendercontext.NodeHealthCheckGVK
		const ours = "kubevirt-workers"
		workersBefore := workers()
		worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nhc-worker", Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": ""}}}
		Expect(k8s.Create(ctx, worker)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, worker))).To(Succeed())
			// The workers' pool lost a node: the next spec starts at rest,
			// once the autopilot has seen it go.
			Eventually(workers).Should(Equal(workersBefore))
			untilSettled()
		})
		// The autopilot sees the new worker and its facts settle first: an
		// Unchanged read before that is the old facts' (under load, the
		// node's arrival then starts a settle period mid-spec).
		Eventually(workers).Should(Equal(workersBefore + 1))
		untilSettled()
		Eventually(func() *unstructured.Unstructured { return get(nhcGVK, "", ours) }).ShouldNot(BeNil())
		Eventually(outcomeOf("node-health-check")).Should(Equal(engine.Unchanged))
		before := get(nhcGVK, "", ours).GetResourceVersion()

		nhc := func(name, key string) *unstructured.Unstructured {
			u := newObj(nhcGVK, "", name)
			Expect(unstructured.SetNestedField(u.Object, map[string]any{"matchExpressions": []any{
				map[string]any{"key": key, "operator": "Exists"}}}, "spec", "selector")).To(Succeed())
			Expect(unstructured.SetNestedField(u.Object, map[string]any{"apiVersion": "self-node-remediation.medik8s.io/v1alpha1",
				"kind": "SelfNodeRemediationTemplate", "namespace": "openshift-workload-availability", "name": "admin"}, "spec", "remediationTemplate")).To(Succeed())
			return u
		}
		// On the masters only: no node in common, no clash.
		masters := nhc("admin-masters", "node-role.kubernetes.io/master")
		Expect(k8s.Create(ctx, masters)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, masters))).To(Succeed()) })
		reconciledAt(poke())
		Expect(status("node-health-check").Outcome).To(Equal(engine.Unchanged))

		// On the infra role: the worker that is also infra is in both.
		infra := nhc("admin-infra", "node-role.kubernetes.io/infra")
		Expect(k8s.Create(ctx, infra)).To(Succeed())
		Eventually(outcomeOf("node-health-check")).Should(Equal(engine.Conflict))
		Expect(status("node-health-check").Reason).To(And(ContainSubstring("admin-infra"), ContainSubstring("node nhc-worker"), Not(ContainSubstring("admin-masters"))))
		Eventually(func() int { return len(events("Conflict", "admin-infra", annotations.DisabledResources)) }).Should(Equal(2))

		// The admin's edit of ours is not reverted while the clash stands.
		update(nhcGVK, "", ours, "admin", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, "40%", "spec", "minHealthy")).To(Succeed())
		})
		reconciledAt(poke())
		Expect(get(nhcGVK, "", ours).Object["spec"].(map[string]any)["minHealthy"]).To(Equal("40%"))
		Expect(get(nhcGVK, "", ours).GetResourceVersion()).NotTo(Equal(before))

		Expect(k8s.Delete(ctx, infra)).To(Succeed())
		Eventually(func() any { return get(nhcGVK, "", ours).Object["spec"].(map[string]any)["minHealthy"] }).Should(Equal("51%"))
		Eventually(outcomeOf("node-health-check")).Should(Equal(engine.Unchanged))
	})

	It("holds a reboot-causing correction while its pool is updating, and writes it once the pool is at rest", func() {
		requireVendorCRDs()
		poolGVK := kcGVK.GroupVersion().WithKind("MachineConfigPool")
		Expect(get(poolGVK, "", "worker")).NotTo(BeNil(), "the worker pool (created by the KubeletConfig spec)")
		setUpdating := func(status string) { setPoolState(ctx, "worker", status == "True") }
		untilSettled()
		setUpdating("True")
		DeferCleanup(func() { setUpdating("False") })
		reconciledAt(poke())
		Expect(outcomeOf("psi-enable")()).NotTo(Equal(engine.Settling), "no write due: nothing is held")

		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Settling))
		Expect(status("psi-enable").Reason).To(ContainSubstring("MachineConfigPool worker is updating"))
		reconciledAt(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "no second rollout stacked on the first")

		setUpdating("False")
		poke()
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(time.Minute).Should(Equal([]any{"psi=1"}))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})

	It("stages writes that reboot a pool outside the HCO's disruption window, never the others, and releases them together when it opens", func() {
		requireVendorCRDs()
		// A worker that runs VMs (its arrival is a fact the reboot assets
		// settle on first).
		workersBefore := workers()
		const node = "vm-worker"
		Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}})).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}))).To(Succeed())
			Eventually(workers).Should(Equal(workersBefore))
			untilSettled()
		})
		Eventually(workers).Should(Equal(workersBefore + 1))
		untilSettled()
		opensAt := closedWindow("kubectl-edit") // a daily window two hours from now: closed
		reconciledAt(poke())
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Unchanged), "nothing due: nothing staged")

		// VMs on a worker: one that migrates, one that blocks the drain,
		// one that is shut down.
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "kubevirt", "kubevirt.io_virtualmachineinstances.yaml")))
		for _, v := range []struct{ name, strategy, migratable string }{
			{"mobile", "LiveMigrate", "True"}, {"pinned", "LiveMigrate", "False"}, {"scratch", "None", "True"},
		} {
			vmi := newObj(impact.VMIGVK, "default", v.name)
			vmi.Object["spec"] = map[string]any{"evictionStrategy": v.strategy, "domain": map[string]any{"devices": map[string]any{}}}
			vmi.Object["status"] = map[string]any{"nodeName": node, "phase": "Running",
				"conditions": []any{map[string]any{"type": "LiveMigratable", "status": v.migratable, "reason": "DisksNotLiveMigratable"}}}
			Expect(k8s.Create(ctx, vmi)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, vmi))).To(Succeed()) })
		}
		// The autopilot counts VMs once it sees KubeVirt's CRD served.
		Eventually(func() bool {
			eval, _, err := rec.Preview(ctx)
			return err == nil && eval.Context.KindAvailable(impact.VMIGVK)
		}).Should(BeTrue())

		// Two corrections on the worker pool, and one that reboots nothing.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		ignition := func() string {
			v, _, _ := unstructured.NestedString(get(mcGVK, "", swapMC).Object, "spec", "config", "ignition", "version")
			return v
		}
		rendered := ignition()
		update(mcGVK, "", swapMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, "3.3.0", "spec", "config", "ignition", "version")).To(Succeed())
		})
		field := []string{"spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"}
		golden := nestedInt(hco(), field...)
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, golden+7, field...)).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Staged))
		Eventually(outcomeOf("swap-enable")).Should(Equal(engine.Staged))
		Expect(status("psi-enable").Reason).To(And(ContainSubstring("disruption window"), ContainSubstring(opensAt.Format(time.RFC3339))))
		Eventually(func() int64 { return nestedInt(hco(), field...) }).Should(Equal(golden), "a write that reboots nothing is never held")
		Expect(testutil.ToFloat64(metrics.AssetOutcome.WithLabelValues("psi-enable", string(engine.Staged)))).To(Equal(1.0))
		Eventually(func() features.State { return featureState("psi") }).Should(Equal(features.Waiting))
		reconciledAt(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "nothing sent outside the window")
		Eventually(func() []eventsv1.Event { return events("Staged", psiMC) }).Should(HaveLen(1))
		Expect(events("Staged", psiMC)[0].Series).To(BeNil(), "one Event per staged write and episode, not repeated")
		// What the rollout will do to the pool's VMs, before it happens.
		Expect(status("psi-enable").Impact).To(And(ContainSubstring(node), ContainSubstring("1 VMI(s) live-migrate"),
			ContainSubstring("1 block the drain: default/pinned"), ContainSubstring("1 are shut down: default/scratch")))
		psi, _ := feature("psi")
		Expect(psi.Assets).To(ContainElement(HaveField("Reason", ContainSubstring("when it rolls: "))), "the features view says it too")
		// render --output diff says so, as the controller holds it.
		diff := runCLI(1, "--kubeconfig", writeKubeconfig(GinkgoT().TempDir()), "--namespace", hcoNamespace, "--output", "diff")
		Expect(diff).To(And(MatchRegexp(`MachineConfig\.machineconfiguration\.openshift\.io/`+psiMC+` changed.*\[staged: `), ContainSubstring("(staged until the disruption window opens)"),
			ContainSubstring("1 VMI(s) live-migrate; 1 block the drain")))

		// The autopilot's clock ten seconds before the window opens: the
		// staged writes go when it does, with no other event, together.
		clockShift.Store(int64(time.Until(opensAt) - 10*time.Second))
		reconciledAt(poke())
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Staged))
		Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(time.Minute).Should(Equal([]any{"psi=1"}))
		Eventually(ignition).WithTimeout(time.Minute).Should(Equal(rendered))
		Eventually(func() []eventsv1.Event { return events("PoolRollout", psiMC, "1 VMI(s) live-migrate") }).ShouldNot(BeEmpty())
		// MCO renders changes that arrive within seconds into one rollout.
		Expect(appliedAt(psiMC).Sub(appliedAt(swapMC)).Abs()).To(BeNumerically("<=", 5*time.Second))
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
	})

	It("stages every reboot-causing write while the disruption window is not understood, and says so", func() {
		requireVendorCRDs()
		// Seen by a reconcile before the edit below: a reconcile already
		// running on the older HCO may send the correction.
		reconciledAt(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisruptionWindow, "weekends 2am-6am")
		}))
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisruptionWindow, "")
			})
		})
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Staged))
		Expect(status("psi-enable").Reason).To(ContainSubstring("not understood"))
		Eventually(func() []eventsv1.Event { return events("InvalidDisruptionWindow", "weekends 2am-6am") }).Should(HaveLen(1))
		Expect(seriesWith(metrics.InvalidAnnotation, "annotation", annotations.DisruptionWindow)).To(Equal(1))
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "a typo never lets a reboot through")

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisruptionWindow, "")
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
	})

	It("merges its node disruption policy beside an admin's, and writes at once, window closed, a change MCO applies without a reboot", func() {
		requireVendorCRDs()
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "0000_80_machine-config_01_machineconfigurations.crd.yaml")))
		mcfg := rendercontext.MachineConfigurationKey
		files := func() []any {
			u := get(mcfg.GVK, "", mcfg.Name)
			if u == nil {
				return nil
			}
			f, _, _ := unstructured.NestedSlice(u.Object, "spec", "nodeDisruptionPolicy", "files")
			return f
		}
		paths := func() []string {
			var out []string
			for _, f := range files() {
				out = append(out, f.(map[string]any)["path"].(string))
			}
			return out
		}
		const shutdownScript = "/usr/local/bin/kubevirt-vm-shutdown"
		Eventually(paths).Should(ContainElement(shutdownScript), "merged into MCO's singleton")
		// An admin's entry, by their own apply: the autopilot's next write
		// must keep it (files is a map keyed by path).
		adminApply := func(files ...any) {
			admin := newObj(mcfg.GVK, "", mcfg.Name)
			admin.Object["spec"] = map[string]any{"nodeDisruptionPolicy": map[string]any{"files": files}}
			Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(admin), client.FieldOwner("admin"))).To(Succeed())
		}
		adminEntry := func(action string) any {
			return map[string]any{"path": "/etc/admin.conf", "actions": []any{map[string]any{"type": action}}}
		}
		adminApply(adminEntry("None"))
		DeferCleanup(func() { adminApply() })
		// MCO publishes the merged policy it acts on.
		publish := func() {
			Eventually(func() error {
				u := get(mcfg.GVK, "", mcfg.Name)
				Expect(unstructured.SetNestedField(u.Object, map[string]any{"clusterPolicies": map[string]any{"files": files(),
					"sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}}}}, "status", "nodeDisruptionPolicyStatus")).To(Succeed())
				Expect(unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")).To(Succeed())
				return k8s.Status().Update(ctx, u)
			}).Should(Succeed())
		}
		policyKnown := func() bool {
			eval, _, err := rec.Preview(ctx)
			Expect(err).NotTo(HaveOccurred())
			_, ok := eval.Context.NodeDisruptionPolicy()
			return ok
		}
		publish()
		Eventually(policyKnown).Should(BeTrue())
		reconciledAt(poke())
		Expect(paths()).To(ContainElements("/etc/admin.conf", shutdownScript), "the admin's entry is kept beside the autopilot's")

		// The feature's MachineConfig, created with no window set.
		const mc = "95-worker-kubevirt-vm-shutdown"
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.SwitchPrefix+"enable-vm-drain-shutdown-inhibitor", "true")
		})
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.SwitchPrefix+"enable-vm-drain-shutdown-inhibitor", "")
			})
			Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", mc) }).Should(BeNil())
		})
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", mc) }).ShouldNot(BeNil())
		Eventually(outcomeOf("vm-drain-shutdown-inhibitor-worker")).Should(Equal(engine.Unchanged))

		// A window that is closed now.
		opensAt := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute)
		reconciledAt(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisruptionWindow, fmt.Sprintf("daily %s-%s UTC", opensAt.Format("15:04"), opensAt.Add(time.Hour).Format("15:04")))
		}))
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisruptionWindow, "")
			})
		})
		entry := func(section, key, name string) map[string]any {
			list, _, _ := unstructured.NestedSlice(get(mcGVK, "", mc).Object, "spec", "config", section, key)
			for _, e := range list {
				if m := e.(map[string]any); m["path"] == name || m["name"] == name {
					return m
				}
			}
			return nil
		}
		setEntry := func(section, key, name, field string, v any) {
			update(mcGVK, "", mc, "kubectl-edit", func(u *unstructured.Unstructured) {
				list, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", section, key)
				for _, e := range list {
					if m := e.(map[string]any); m["path"] == name || m["name"] == name {
						m[field] = v
					}
				}
				Expect(unstructured.SetNestedSlice(u.Object, list, "spec", "config", section, key)).To(Succeed())
			})
		}
		// An edit of the script: by the published policy MCO restarts the
		// service, no drain, so the correction is not staged.
		rendered := entry("storage", "files", shutdownScript)["contents"]
		setEntry("storage", "files", shutdownScript, "contents", map[string]any{"source": "data:,edited"})
		Eventually(func() any { return entry("storage", "files", shutdownScript)["contents"] }).Should(Equal(rendered))
		Eventually(func() []eventsv1.Event {
			return events("PoolRollout", mc, "rolls without a reboot", "restart kubevirt-vm-shutdown.service")
		}).ShouldNot(BeEmpty())
		Expect(events("Staged", mc)).To(BeEmpty())

		// An edit of the unit has no policy entry: it reboots, so it waits.
		setEntry("systemd", "units", "kubevirt-vm-shutdown.service", "enabled", false)
		Eventually(outcomeOf("vm-drain-shutdown-inhibitor-worker")).Should(Equal(engine.Staged))
		Expect(entry("systemd", "units", "kubevirt-vm-shutdown.service")["enabled"]).To(BeFalse())
		Expect(status("vm-drain-shutdown-inhibitor-worker").Reason).To(ContainSubstring("disruption window"))
		// While the unit is shipped disabled, a restart would start it: the
		// autopilot withdraws its entry for the script.
		Eventually(paths).ShouldNot(ContainElement(shutdownScript))

		// A policy MCO has not caught up with is no policy: an edit of the
		// script alone now waits too.
		setEntry("systemd", "units", "kubevirt-vm-shutdown.service", "enabled", true)
		Eventually(outcomeOf("vm-drain-shutdown-inhibitor-worker")).Should(Equal(engine.Unchanged))
		adminApply(adminEntry("Reboot"))
		Eventually(policyKnown).Should(BeFalse())
		setEntry("storage", "files", shutdownScript, "contents", map[string]any{"source": "data:,edited-again"})
		Eventually(outcomeOf("vm-drain-shutdown-inhibitor-worker")).Should(Equal(engine.Staged))
		Eventually(paths).Should(ContainElement(shutdownScript), "declared again once the unit is enabled")
		publish()
		Eventually(func() any { return entry("storage", "files", shutdownScript)["contents"] }).Should(Equal(rendered))
	})

	It("yields a field to its declared owner: never forced, reported once, handed back when the declaration goes", func() {
		requireVendorCRDs()
		writes := func() float64 { return mcWrites(psiMC) }
		setYield := func(v string) {
			reconciledSince(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.YieldTo, v)
			}))
		}
		edit := func(manager string) {
			update(mcGVK, "", psiMC, manager, func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
			})
		}
		// Not declared: a pipeline's edit is drift, corrected.
		before := writes()
		edit("my-pipeline")
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Expect(writes()).To(BeNumerically(">", before))

		// Declared: its value stays, nothing is written, and it is said
		// once (Event, metric, status, features view).
		setYield("default, my-pipeline")
		DeferCleanup(func() {
			setYield("none")
			Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
			setYield("")
		})
		edit("my-pipeline")
		Eventually(func() []engine.Deferral { return status("psi-enable").Deferred }).Should(ConsistOf(
			engine.Deferral{Field: "/spec/kernelArguments", Managers: []string{"my-pipeline"}}))
		before = writes()
		reconciledSince(poke())
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "the owner's value is never forced")
		Expect(writes()).To(Equal(before), "no write to a deferred field")
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Unchanged), "a deferred field is not drift")
		Eventually(func() []eventsv1.Event { return events("Deferred", psiMC, "/spec/kernelArguments (my-pipeline)") }).Should(HaveLen(1))
		Expect(testutil.ToFloat64(metrics.Deferred.WithLabelValues("MachineConfig", "", psiMC, "my-pipeline"))).To(Equal(1.0))
		psi, _ := feature("psi")
		Expect(psi.Assets).To(ContainElement(HaveField("Deferred", Not(BeEmpty()))))

		// Handed back: the declaration no longer names it.
		setYield("none")
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Expect(writes()).To(BeNumerically(">", before))
		Eventually(func() float64 {
			return float64(seriesWith(metrics.Deferred, "name", psiMC))
		}).Should(BeZero(), "the metric goes with the deferral")

		// Not understood: reported, and the defaults still apply, so a
		// typo never hands a GitOps controller's field back.
		setYield("argo cd")
		Eventually(func() []eventsv1.Event { return events("InvalidYieldTo", "argo cd") }).Should(HaveLen(1))
		edit("argocd-controller")
		Eventually(func() []engine.Deferral { return status("psi-enable").Deferred }).Should(ConsistOf(
			engine.Deferral{Field: "/spec/kernelArguments", Managers: []string{"argocd-controller"}}))
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))
	})

	It("reports drift without writing in report-only, for the whole autopilot or one object, and says when it is compliant again", func() {
		requireVendorCRDs()
		allWrites := func() float64 {
			ch := make(chan prometheus.Metric, 1000)
			metrics.CorrectiveWrites.Collect(ch)
			close(ch)
			n := 0.0
			for m := range ch {
				var pb dto.Metric
				Expect(m.Write(&pb)).To(Succeed())
				n += pb.GetCounter().GetValue()
			}
			return n
		}
		setHCO := func(k, v string) {
			reconciledSince(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, k, v) }))
		}
		setHCO(annotations.Autopilot, "report-only")
		DeferCleanup(func() { setHCO(annotations.Autopilot, "") })
		Eventually(func() []eventsv1.Event { return events("ReportOnly") }).ShouldNot(BeEmpty())

		// A drifted cluster: a kernel argument and a golden HCO setting.
		before := allWrites()
		mark := requests.mark()
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		field := []string{"spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"}
		golden := nestedInt(hco(), field...)
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, golden+3, field...)).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Drifted))
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Drifted))
		Expect(status("psi-enable").Drift).To(ContainElement("/spec/kernelArguments"))
		reconciledSince(poke())
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "nothing written")
		Expect(nestedInt(hco(), field...)).To(Equal(golden+3), "nothing written, the HCO included")
		Expect(allWrites()).To(Equal(before), "zero writes in report-only")
		// Only the fleet status, which reports the drift (a report, like
		// an Event): no write to anything the autopilot manages, not even
		// a dry-run.
		var configWrites []string
		for _, w := range writes(requests.since(mark)) {
			if !strings.HasSuffix(w, "/configmaps/"+fleetstatus.Name) {
				configWrites = append(configWrites, w)
			}
		}
		Expect(configWrites).To(BeEmpty(), "no write request to a managed object")
		Eventually(func() []eventsv1.Event { return events("Drifted", psiMC, "/spec/kernelArguments") }).Should(HaveLen(1))
		Expect(testutil.ToFloat64(metrics.Compliance.WithLabelValues("psi-enable", "psi"))).To(Equal(0.0))
		Expect(testutil.ToFloat64(metrics.Compliance.WithLabelValues("swap-enable", "swap"))).To(Equal(1.0))
		Eventually(func() features.State { return featureState("psi") }).Should(Equal(features.Drifted))

		// Someone puts it back: compliant again, said once.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=1"}, "spec", "kernelArguments")).To(Succeed())
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Unchanged))
		Eventually(func() []eventsv1.Event { return events("Compliant", psiMC) }).Should(HaveLen(1))
		Expect(testutil.ToFloat64(metrics.Compliance.WithLabelValues("psi-enable", "psi"))).To(Equal(1.0))

		// Managed again: the golden setting is applied.
		setHCO(annotations.Autopilot, "")
		Eventually(func() int64 { return nestedInt(hco(), field...) }).Should(Equal(golden))
		Eventually(func() int { return seriesWith(metrics.Compliance, "asset", "psi-enable") }).Should(BeZero(), "no compliance series outside report-only")

		// One object in report-only: its drift is reported, the rest managed.
		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, "report-only")
			Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
		})
		DeferCleanup(func() {
			update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Mode, "") })
			Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		})
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Drifted))
		before = mcWrites(psiMC)
		reconciledSince(poke())
		Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}))
		Expect(mcWrites(psiMC)).To(Equal(before))
	})

	It("masks one element of a keyed list by its key (ignore-fields), keeps the rest managed, and hands it back when unmasked", func() {
		requireVendorCRDs()
		nhcGVK := rendercontext.NodeHealthCheckGVK
		const ours = "kubevirt-workers"
		Eventually(outcomeOf("node-health-check")).Should(Equal(engine.Unchanged))
		durations := func() map[string]any {
			out := map[string]any{}
			list, _, _ := unstructured.NestedSlice(get(nhcGVK, "", ours).Object, "spec", "unhealthyConditions")
			for _, c := range list {
				m := c.(map[string]any)
				out[m["type"].(string)+"="+m["status"].(string)] = m["duration"]
			}
			return out
		}
		setDurations := func(manager string, to map[string]string) string {
			return update(nhcGVK, "", ours, manager, func(u *unstructured.Unstructured) {
				list, _, _ := unstructured.NestedSlice(u.Object, "spec", "unhealthyConditions")
				for _, c := range list {
					m := c.(map[string]any)
					if d, ok := to[m["type"].(string)+"="+m["status"].(string)]; ok {
						m["duration"] = d
					}
				}
				Expect(unstructured.SetNestedSlice(u.Object, list, "spec", "unhealthyConditions")).To(Succeed())
			})
		}
		// The element is named by its keys, wherever it sits in the list.
		update(nhcGVK, "", ours, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.IgnoreFields, "/spec/unhealthyConditions/type=Ready&status=Unknown/duration")
		})
		reconciledAt(poke())
		// (Not waited on by resourceVersion: the correction writes a newer one.)
		setDurations("admin", map[string]string{"Ready=Unknown": "900s", "Ready=False": "900s"})
		Eventually(durations).Should(Equal(map[string]any{"Ready=Unknown": "900s", "Ready=False": "300s"}),
			"the masked element keeps the admin's value; its sibling is corrected")
		for range 2 {
			reconciledAt(poke())
		}
		Expect(durations()).To(HaveKeyWithValue("Ready=Unknown", "900s"), "across reconciles")

		update(nhcGVK, "", ours, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.IgnoreFields, "") })
		Eventually(durations).Should(Equal(map[string]any{"Ready=Unknown": "300s", "Ready=False": "300s"}), "unmasked: managed again")
	})
}

// lateHCOSpecs run last: they remove the HCO.
func lateHCOSpecs(ctx context.Context) {
	It("idles without an HCO and configures one created after it started", func() {
		stopManager()
		if h := hco(); h != nil {
			Expect(k8s.Delete(ctx, h)).To(Succeed())
		}
		Eventually(hco).Should(BeNil())
		startManager()
		Eventually(func() bool { return !rec.Snapshot().Health.LastReconcile.IsZero() }).Should(BeTrue(), "a reconcile ran and found no HCO")

		h := newObj(hcoGVK, hcoNamespace, hcoName)
		Expect(k8s.Create(ctx, h, client.FieldOwner("hco-operator"))).To(Succeed())
		Eventually(func() int64 {
			return nestedInt(hco(), "spec", "virtualization", "liveMigrationConfig", "parallelOutboundMigrationsPerNode")
		}).Should(Equal(int64(2)))
	})
}

// runCLI runs the render command in-process and checks its exit code.
func runCLI(wantCode int, args ...string) string {
	var out, errOut bytes.Buffer
	code := cluster.Render(args, &out, &errOut)
	Expect(code).To(Equal(wantCode), "render %v\nstdout:\n%s\nstderr:\n%s", args, out.String(), errOut.String())
	return out.String()
}

// sameAsController compares entries (JSON output) with the controller's
// last decisions: same status word and, when included, the same object.
func sameAsController(got any, what string) {
	var entries []preview.Entry
	switch g := got.(type) {
	case string:
		Expect(json.Unmarshal([]byte(g), &entries)).To(Succeed(), what)
	case []preview.Entry:
		entries = g
	}
	byAsset := map[string]preview.Entry{}
	for _, e := range entries {
		byAsset[e.Asset] = e
	}
	statuses := rec.Snapshot().Assets
	Expect(entries).To(HaveLen(len(statuses)), "%s lists every asset", what)
	for _, s := range statuses {
		e, ok := byAsset[s.Asset]
		Expect(ok).To(BeTrue(), "%s lists asset %s", what, s.Asset)
		want := preview.Status(verdictOf(s.Outcome))
		if what == "offline render" && s.Outcome == engine.Retained {
			// Offline there are no live objects (but the HCO) to retain.
			want = preview.Status(engine.VerdictInactive)
		}
		Expect(e.Status).To(Equal(want), "%s: asset %s (controller: %s %s; %s: %s)", what, s.Asset, s.Outcome, s.Reason, what, e.Reason)
		if s.Desired != nil {
			want, _ := json.Marshal(s.Desired.Object)
			have, _ := json.Marshal(e.Object)
			Expect(string(have)).To(MatchJSON(string(want)), "%s: desired %s", what, s.Asset)
		}
	}
}

// offlineInputs writes the cluster's HCO, nodes and CRDs to files, as an
// admin would export them, and returns the render flags reading them.
func offlineInputs(ctx context.Context, dir string) []string {
	h := hco()
	h.SetManagedFields(nil)
	writeYAMLFile(filepath.Join(dir, "hco.yaml"), h.Object)
	var nodes corev1.NodeList
	Expect(k8s.List(ctx, &nodes)).To(Succeed())
	nodes.APIVersion, nodes.Kind = "v1", "List"
	writeYAMLFile(filepath.Join(dir, "nodes.yaml"), nodes)
	var crds apiextensionsv1.CustomResourceDefinitionList
	Expect(k8s.List(ctx, &crds)).To(Succeed())
	Expect(os.MkdirAll(filepath.Join(dir, "crds"), 0o755)).To(Succeed())
	for i := range crds.Items {
		c := crds.Items[i]
		c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		writeYAMLFile(filepath.Join(dir, "crds", c.Name+".yaml"), c)
	}
	return []string{"--hco-file", filepath.Join(dir, "hco.yaml"), "--nodes-file", filepath.Join(dir, "nodes.yaml"),
		"--crds", filepath.Join(dir, "crds"), "--output", "json", "--show-excluded"}
}

func writeYAMLFile(path string, v any) {
	y, err := yaml.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(path, y, 0o600)).To(Succeed())
}

// writeKubeconfig writes the test API server's admin credentials.
func writeKubeconfig(dir string) string {
	path := filepath.Join(dir, "kubeconfig")
	Expect(testenv.WriteKubeconfig(cfg, path)).To(Succeed())
	return path
}

// verdictOf is the verdict a recorded outcome came from: a write's outcome
// (or a write held) came from an included asset, a deletion from an
// inactive one; the rest are verdicts recorded as they are.
func verdictOf(o engine.Outcome) engine.Verdict {
	switch o {
	case engine.Applied, engine.Unchanged, engine.Throttled, engine.Settling:
		return engine.VerdictIncluded
	case engine.Deleted:
		return engine.VerdictInactive
	}
	return engine.Verdict(o)
}
