package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
)

var infraGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}

// featureState is the state /debug/features and render --output features
// show for a feature, from the running controller's caches.
func featureState(name string) features.State {
	s, _ := feature(name)
	return s.State
}

// featureReason is a feature's reason as /debug/features shows it.
func featureReason(name string) string {
	s, _ := feature(name)
	return s.Reason
}

func feature(name string) (features.Status, bool) {
	eval, _, err := rec.Preview(context.Background())
	if err != nil {
		return features.Status{}, false
	}
	for _, s := range features.Of(embedded(), eval.Context, eval.Decisions, rec.Snapshot().Last) {
		if s.Name == name {
			return s, true
		}
	}
	return features.Status{}, false
}

// monitoringConfig reads config.yaml of the shared cluster monitoring config.
func monitoringConfig() map[string]any {
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "openshift-monitoring", Name: "cluster-monitoring-config"}, cm); err != nil {
		return nil
	}
	out := map[string]any{}
	Expect(yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &out)).To(Succeed())
	return out
}

func featureSpecs(ctx context.Context) {
	It("waits for an operand image: nothing is written until it is configured, then the feature converges, and switched off what it created goes", func() {
		const sw = "platform.kubevirt.io/enable-kubevirt-metrics-exporter"
		const env = "RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER"
		const image = exporterImage
		nsKey := client.ObjectKey{Name: "kubevirt-metrics-exporter"}
		dsKey := client.ObjectKey{Namespace: "kubevirt-metrics-exporter", Name: "kubevirt-metrics-exporter"}
		Expect(os.Unsetenv(env)).To(Succeed())
		DeferCleanup(func() { Expect(os.Unsetenv(env)).To(Succeed()) })

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, sw, "true") })
		// Each asset's status is recorded as the reconcile reaches it: wait
		// for each, not for one and then read another.
		Eventually(outcomeOf("kubevirt-metrics-exporter-namespace")).Should(Equal(engine.MissingDependency))
		Eventually(func() string { return status("kubevirt-metrics-exporter-daemonset").Reason }).Should(ContainSubstring(env))
		Eventually(func() features.State { return featureState("kubevirt-metrics-exporter") }).Should(Equal(features.Waiting))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, nsKey, &corev1.Namespace{}))).To(BeTrue(), "nothing is written while the image is missing")

		// The operator's Deployment gains the image (OLM sets it) and rolls
		// a new pod, which renders it into the DaemonSet.
		Expect(os.Setenv(env, image)).To(Succeed())
		stopManager()
		startManager()
		ds := &appsv1.DaemonSet{}
		Eventually(func() error { return k8s.Get(ctx, dsKey, ds) }).Should(Succeed())
		Expect(ds.Spec.Template.Spec.Containers[0].Image).To(Equal(image))
		Eventually(outcomeOf("kubevirt-metrics-exporter-daemonset")).Should(Equal(engine.Unchanged))

		// render against the cluster takes the images from the autopilot's
		// Deployment, as the controller in its pod sees them, not from the
		// environment of whoever runs it.
		const deployed = "quay.io/kubevirt/kubevirt-metrics-exporter:deployed"
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "virt-platform-autopilot"}}
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "autopilot"}}
		dep.Spec.Template.Labels = map[string]string{"app": "autopilot"}
		dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: "autopilot", Env: []corev1.EnvVar{
			{Name: env, Value: deployed},
			{Name: "RELATED_IMAGE_FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		}}}
		Expect(k8s.Create(ctx, dep)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, dep))).To(Succeed()) })
		var out, errOut bytes.Buffer
		Expect(cluster.Render([]string{"--kubeconfig", writeKubeconfig(GinkgoT().TempDir()), "--namespace", hcoNamespace,
			"--autopilot-deployment", operatorNamespace + "/virt-platform-autopilot", "--asset", "kubevirt-metrics-exporter-daemonset", "-o", "yaml"}, &out, &errOut)).To(Equal(0), errOut.String())
		Expect(out.String()).To(ContainSubstring("image: " + deployed))
		Expect(errOut.String()).To(And(ContainSubstring("operand images from Deployment "+operatorNamespace+"/virt-platform-autopilot"), ContainSubstring("RELATED_IMAGE_FROM_SECRET")))
		// Without the Deployment the images are unknown, and it says so.
		errOut.Reset()
		out.Reset()
		Expect(cluster.Render([]string{"--kubeconfig", writeKubeconfig(GinkgoT().TempDir()), "--namespace", hcoNamespace,
			"--autopilot-deployment", "nowhere/none", "--asset", "kubevirt-metrics-exporter-daemonset", "-o", "status"}, &out, &errOut)).To(Equal(0), errOut.String())
		Expect(out.String()).To(ContainSubstring("MISSING-DEPENDENCY"))
		Expect(errOut.String()).To(ContainSubstring("operand images are unknown"))

		// Off: the objects it created go, one by one. The Namespace stays:
		// deleting it would delete whatever else it holds (an admin's
		// ConfigMap here), which the autopilot cannot all see.
		theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: nsKey.Name, Name: "admin-notes"}}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, sw, "") })
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, dsKey, &appsv1.DaemonSet{})) }).Should(BeTrue())
		Eventually(outcomeOf("kubevirt-metrics-exporter-namespace")).Should(Equal(engine.Retained))
		Eventually(func() int {
			return len(events("Retained", "kubevirt-metrics-exporter", "would delete everything in it"))
		}).Should(BeNumerically(">", 0))
		ns := &corev1.Namespace{}
		Expect(k8s.Get(ctx, nsKey, ns)).To(Succeed())
		Expect(ns.DeletionTimestamp).To(BeNil(), "a container is never deleted with what it holds")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &corev1.ConfigMap{})).To(Succeed())
		Eventually(func() features.State { return featureState("kubevirt-metrics-exporter") }).Should(Equal(features.Off))
	})

	It("turns higher density on in a closed window with no write that rolls a pool, overcommits only while the HCO's switch keeps WASP away, and beyond 120% only while every node that runs VMs reports swap", func() {
		const hd = "platform.kubevirt.io/enable-higher-density"
		overcommit := func() int64 {
			return nestedInt(hco(), "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
		}
		setSwap := func(n *corev1.Node, bytes int64) {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
			n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &bytes}
			Expect(k8s.Status().Update(ctx, n)).To(Succeed())
		}
		worker := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "swap-worker", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		Expect(k8s.Create(ctx, worker)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, worker))).To(Succeed()) })
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Unchanged))
		closedWindow("admin")
		untilSettled()
		mark := requests.mark()
		rv := update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, hd, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, hd, "")
				setAnnotation(u, annotations.Autopilot, "")
				setAnnotation(u, annotations.Mode, "")
			})
		})
		// The switch absent (everything, here): KSM, and no memory
		// overcommit, which would make the HCO deploy the WASP agent, a
		// second swap stack (pkg/hcoreact); the features view says why.
		Eventually(func() any {
			v, _, _ := unstructured.NestedFieldNoCopy(hco().Object, "spec", "virtualization", "ksmConfiguration")
			return v
		}).ShouldNot(BeNil())
		reconciledSince(rv)
		Expect(overcommit()).To(BeNumerically("<=", 100), "not overcommitted (absent, or the CRD's default 100) while the HCO would deploy WASP")
		Eventually(func() string { return featureReason("higher-density") }).Should(ContainSubstring("the HCO would deploy the WASP agent"))
		for _, w := range writes(requests.since(mark)) {
			Expect(w).NotTo(Or(ContainSubstring("machineconfigs"), ContainSubstring("kubeletconfigs")), "nothing that rolls a pool")
		}
		// The switch that keeps the HCO from deploying it. What the write
		// would make the HCO do, seen before it goes (the HCO held in
		// report-only meanwhile): overcommit, no WASP, no pool rolled.
		reconciledSince(update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.Mode, "report-only")
			setAnnotation(u, annotations.Autopilot, "true")
		}))
		diff := runCLI(1, "--kubeconfig", writeKubeconfig(GinkgoT().TempDir()), "--namespace", hcoNamespace, "--output", "diff")
		Expect(diff).To(ContainSubstring("the HCO reacts to spec.virtualization.higherWorkloadDensity.memoryOvercommitPercentage: KubeVirt's developerConfiguration.memoryOvercommit follows it"))
		Expect(diff).To(ContainSubstring("no MachineConfig or KubeletConfig: no pool rolls"))
		Expect(diff).NotTo(ContainSubstring("WASP"), "the switch keeps the HCO from deploying it")
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Mode, "") })
		Eventually(overcommit).Should(Equal(int64(120)), "no node reports swap yet (the swap MachineConfig alone is not swap)")
		Eventually(func() string { return featureReason("higher-density") }).Should(ContainSubstring("the HCO does not deploy the WASP agent"))
		Eventually(func() string { return featureReason("higher-density") }).Should(ContainSubstring("VM nodes report swap"))

		// Every VM node's kubelet reports swap.
		var nodes corev1.NodeList
		Expect(k8s.List(ctx, &nodes)).To(Succeed())
		for i := range nodes.Items {
			if _, ok := nodes.Items[i].Labels["node-role.kubernetes.io/worker"]; ok {
				setSwap(&nodes.Items[i], 8<<30)
			}
		}
		Eventually(overcommit).Should(Equal(int64(150)))
		Eventually(func() string { return featureReason("higher-density") }).ShouldNot(ContainSubstring("report swap"))

		// One loses it (a partition gone after a reinstall): back to 120.
		setSwap(worker, 0)
		Eventually(overcommit).Should(Equal(int64(120)))
	})

	It("reads another operator's object through a watch of that one object: the descheduler's utilization metric follows its recording rules, at no request in steady state", func() {
		requireVendorCRDs()
		const k3 = "descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m"
		const combined = "descheduler:combined_utilization_and_pressure:avg1m"
		if apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "kubedeschedulers.operator.openshift.io"}, &apiextensionsv1.CustomResourceDefinition{})) {
			installCRD(ctx, deschedulerCRD("4-21")) // when run on its own
		}
		prCRD := readCRD(filepath.Join(vendorDir(), "prometheus", "monitoring.coreos.com_prometheusrules.yaml"))
		installCRD(ctx, prCRD)
		DeferCleanup(func() {
			removeCRD(ctx, prCRD.Name)
			// Seen gone by the autopilot too (its CRD watch lags the API
			// server): the specs after this one start from a settled state.
			Eventually(outcomeOf("autopilot-alerts")).Should(Equal(engine.MissingDependency))
		})
		rules := deschedulerRules(combined, k3)
		Expect(k8s.Create(ctx, rules, client.FieldOwner("descheduler-operator"))).To(Succeed())
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "") })
			Eventually(func() *unstructured.Unstructured { return get(kdGVK, deschedulerNamespace, "cluster") }).Should(BeNil())
		})
		profile := func() any {
			kd := get(kdGVK, deschedulerNamespace, "cluster")
			if kd == nil {
				return nil
			}
			return dig(kd.Object, "spec", "profileCustomizations", "devActualUtilizationProfile")
		}
		Eventually(profile).Should(Equal("PrometheusCPUMemoryCombinedProfile"))

		// The operator's rules change (an older build): the watch on that
		// one object brings the change, no resync needed.
		update(rules.GroupVersionKind(), deschedulerNamespace, "descheduler-rules", "descheduler-operator", func(u *unstructured.Unstructured) {
			u.Object["spec"] = deschedulerRules(combined).Object["spec"]
		})
		Eventually(profile).Should(Equal("PrometheusCPUCombined"))
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))

		mark := requests.mark()
		rv := poke()
		Eventually(func() string { return rec.Snapshot().Health.HCOResourceVersion }).Should(Equal(rv))
		Expect(requests.since(mark)).To(BeEmpty(), "the looked-up object is read from its watch, not the API server")
	})

	It("merges a feature's setting into a config it shares with an admin, keeps that config when the feature goes, and removes its own MachineConfigs", func() {
		requireVendorCRDs()
		const ksm = "platform.kubevirt.io/enable-ksm-zero-only"
		infra := newObj(infraGVK, "", "cluster")
		infra.Object["spec"] = map[string]any{}
		Expect(k8s.Create(ctx, infra)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, infra))).To(Succeed()) })
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metaName("openshift-monitoring")})).To(Succeed())
		admin := &corev1.ConfigMap{ObjectMeta: metaName("cluster-monitoring-config")}
		admin.Namespace = "openshift-monitoring"
		admin.Data = map[string]string{"config.yaml": "prometheusK8s:\n  retention: 15d\n"}
		Expect(k8s.Create(ctx, admin, client.FieldOwner("admin"))).To(Succeed())
		Eventually(func() features.State { return featureState("ksm-zero-only") }).Should(Equal(features.Off))

		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, ksm, "true") })
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", "90-worker-kubevirt-ksm") }).ShouldNot(BeNil())
		Eventually(func() any {
			return dig(monitoringConfig(), "nodeExporter", "collectors", "ksmd", "enabled")
		}).Should(Equal(true))
		Expect(dig(monitoringConfig(), "prometheusK8s", "retention")).To(Equal("15d"), "the admin's settings stay")
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "openshift-monitoring", Name: "cluster-monitoring-config"}, cm)).To(Succeed())
		Expect(cm.Annotations).To(HaveKeyWithValue(annotations.Shared, "true"))
		Eventually(outcomeOf("ksm-node-exporter-collector")).Should(Equal(engine.Unchanged))
		Eventually(func() features.State { return featureState("ksm-zero-only") }).Should(Equal(features.Active))

		// The admin edits the config again: their change stays, the
		// collector stays on, and the file is not rewritten by the autopilot.
		cm.Data["config.yaml"] = "# ours\nprometheusK8s:\n  retention: 30d\nnodeExporter:\n  collectors:\n    ksmd:\n      enabled: true\n"
		Expect(k8s.Update(ctx, cm, client.FieldOwner("admin"))).To(Succeed())
		Expect(outcomeAt("ksm-node-exporter-collector", cm.ResourceVersion).Outcome).To(Equal(engine.Unchanged))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "openshift-monitoring", Name: "cluster-monitoring-config"}, cm)).To(Succeed())
		Expect(cm.Data["config.yaml"]).To(HavePrefix("# ours\n"), "byte for byte: comments kept")

		// A switch that is an HCO field: the admin configures KSM in the
		// HCO itself. The feature fills a gap, never overrides: its node
		// configuration goes, and comes back when the field is cleared.
		setKSM := func(v any) {
			update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				if v == nil {
					unstructured.RemoveNestedField(u.Object, "spec", "virtualization", "ksmConfiguration")
					return
				}
				Expect(unstructured.SetNestedField(u.Object, v, "spec", "virtualization", "ksmConfiguration")).To(Succeed())
			})
		}
		setKSM(map[string]any{"nodeLabelSelector": map[string]any{}})
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", "90-worker-kubevirt-ksm") }).Should(BeNil())
		Eventually(outcomeOf("ksm-zero-only-worker")).Should(Equal(engine.Inactive))
		Expect(status("ksm-zero-only-worker").Reason).To(ContainSubstring("ksmConfiguration"))
		setKSM(nil)
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", "90-worker-kubevirt-ksm") }).ShouldNot(BeNil())

		// Off: the MachineConfigs go, the shared config stays as it is.
		update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, ksm, "") })
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", "90-worker-kubevirt-ksm") }).Should(BeNil())
		Eventually(outcomeOf("ksm-node-exporter-collector")).Should(Equal(engine.Retained))
		Expect(dig(monitoringConfig(), "prometheusK8s", "retention")).To(Equal("30d"))
		Eventually(func() features.State { return featureState("ksm-zero-only") }).Should(Equal(features.Off))
	})
}

func deschedulerRules(records ...string) *unstructured.Unstructured {
	u := newObj(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, deschedulerNamespace, "descheduler-rules")
	rules := []any{}
	for _, r := range records {
		rules = append(rules, map[string]any{"record": r, "expr": "vector(1)"})
	}
	u.Object["spec"] = map[string]any{"groups": []any{map[string]any{"name": "descheduler", "rules": rules}}}
	return u
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}
