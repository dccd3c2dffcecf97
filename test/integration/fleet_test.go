package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/fleetstatus"
)

// statusData is the fleet status ConfigMap's data (nil while absent).
func statusData() map[string]string {
	cm := &corev1.ConfigMap{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: fleetstatus.Name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return cm.Data
}

// docObjects are the YAML objects of a Markdown file's yaml blocks.
func docObjects(path string) []*unstructured.Unstructured {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var out []*unstructured.Unstructured
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(raw, -1) {
		for _, doc := range bytes.Split(m[1], []byte("\n---\n")) {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal(doc, &u.Object)).To(Succeed())
			out = append(out, u)
		}
	}
	return out
}

// musthave says whether live holds every field of tmpl's data, as a
// ConfigurationPolicy's musthave compares a ConfigMap's data.
func musthave(tmpl map[string]any, live map[string]string) bool {
	data, _, _ := unstructured.NestedStringMap(tmpl, "data")
	for k, v := range data {
		if got, ok := live[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func fleetSpecs(ctx context.Context) {
	It("keeps the fleet status ConfigMap current, written only when a state changes", func() {
		requireVendorCRDs()
		// Every feature, in the state the features view shows.
		Eventually(func() map[string]string {
			eval, _, err := rec.Preview(ctx)
			Expect(err).NotTo(HaveOccurred())
			data := statusData()
			mismatch := map[string]string{}
			for _, st := range features.Of(embedded(), eval.Context, eval.Decisions, rec.Snapshot().Last) {
				if got := data[st.Name+".state"]; got != string(st.State) {
					mismatch[st.Name] = got + " != " + string(st.State)
				}
			}
			return mismatch
		}).Should(BeEmpty())
		data := statusData()
		Expect(data).To(HaveKey(fleetstatus.KeyVersion))
		Expect(data[fleetstatus.KeyHealthy] == "true").To(Equal(data[fleetstatus.KeyAttention] == ""))

		// Steady state, once facts an earlier spec changed have settled
		// (and a CRD an earlier spec removed is seen gone: a state change,
		// written once): two reconciles in a row write nothing.
		reconciledSince(poke())
		Eventually(settling).WithTimeout(testSettle + 30*time.Second).Should(BeEmpty())
		quiet := func() []string {
			mark := requests.mark()
			reconciledSince(poke())
			reconciledSince(poke())
			return writes(requests.since(mark))
		}
		Eventually(quiet).WithTimeout(time.Minute).Should(BeEmpty(), "steady state writes nothing")
		Expect(quiet()).To(BeEmpty(), "and keeps writing nothing")

		// A state change is written: psi excluded by the root list, then back.
		setExclusion := func(v string) {
			reconciledSince(update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisabledResources, v)
			}))
		}
		setExclusion("MachineConfig/" + psiMC)
		DeferCleanup(func() { setExclusion("") })
		// Excluded, or not applicable while another of its assets is
		// inactive: whichever the features view says, the ConfigMap says.
		Eventually(func() bool {
			st := featureState("psi")
			return st != features.Active && statusData()["psi.state"] == string(st)
		}).Should(BeTrue())
		Expect(statusData()["psi.compliance"]).To(BeElementOf(fleetstatus.NotApplicable, fleetstatus.Unknown))
		setExclusion("")
		Eventually(func() bool {
			st := featureState("psi")
			return st == features.Active && statusData()["psi.state"] == string(st)
		}).WithTimeout(testSettle + 30*time.Second).Should(BeTrue())
		Expect(statusData()["psi.compliance"]).To(Equal(fleetstatus.Compliant))
	})

	It("follows the ConfigMap in the cluster: another writer's change and a deletion are undone, another writer's key is left alone", func() {
		requireVendorCRDs()
		Eventually(func() string { return statusData()[fleetstatus.KeyAutopilot] }).Should(Equal(fleetstatus.Active))
		want := statusData()["psi.compliance"]
		Expect(want).NotTo(BeEmpty())
		// An RHACM policy switched to enforce writes its own idea of the key.
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: fleetstatus.Name}, cm)).To(Succeed())
		cm.Data["psi.compliance"] = "Enforced"
		cm.Data["team"] = "virt"
		Expect(k8s.Update(ctx, cm, client.FieldOwner("governance-policy-framework"))).To(Succeed())
		Eventually(func() string { return statusData()["psi.compliance"] }).Should(Equal(want), "the autopilot's key is restored")
		Expect(statusData()["team"]).To(Equal("virt"), "another writer's own key stays")
		// A reason edited and a label removed by someone else: restored too
		// (a reason the autopilot's own words change alone is not written).
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: fleetstatus.Name}, cm)).To(Succeed())
		reason := cm.Data["psi.reason"]
		cm.Data["psi.reason"] = "edited by hand"
		delete(cm.Labels, "app.kubernetes.io/component")
		Expect(k8s.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
		Eventually(func() string { return statusData()["psi.reason"] }).Should(Equal(reason), "another writer's reason is undone")
		Eventually(func() map[string]string {
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: fleetstatus.Name}, cm)).To(Succeed())
			return cm.Labels
		}).Should(HaveKeyWithValue("app.kubernetes.io/component", "fleet-status"), "its labels are restored")
		// Deleted: written again, without waiting for a state change.
		Expect(k8s.Delete(ctx, cm)).To(Succeed())
		Eventually(func() string { return statusData()["psi.compliance"] }).Should(Equal(want))
		// Steady again: two reconciles in a row do not write the status
		// (written once, not on every reconcile).
		Eventually(func() []string {
			reconciledSince(poke())
			mark := requests.mark()
			reconciledSince(poke())
			reconciledSince(poke())
			var status []string
			for _, w := range writes(requests.since(mark)) {
				if strings.HasSuffix(w, "/configmaps/"+fleetstatus.Name) {
					status = append(status, w)
				}
			}
			return status
		}).WithTimeout(time.Minute).Should(BeEmpty(), "the status is written once, not on every reconcile")
	})

	It("has fleet examples (docs/fleet.md) the vendors' RHACM and Argo CD CRDs accept, reading the live status", func() {
		requireVendorCRDs()
		for _, dir := range []string{"acm", "argocd"} {
			files, err := filepath.Glob(filepath.Join(vendorDir(), dir, "*.yaml"))
			Expect(err).NotTo(HaveOccurred())
			Expect(files).NotTo(BeEmpty())
			for _, f := range files {
				installCRD(ctx, readCRD(f))
			}
		}
		objs := docObjects(filepath.Join(repoRoot(), "docs", "fleet.md"))
		kinds := map[string]int{}
		var templates []map[string]any
		for _, u := range objs {
			if _, fn := u.GetAnnotations()["config.kubernetes.io/function"]; fn {
				continue // a KRM function's configuration: read by kustomize, never applied
			}
			kinds[u.GetKind()]++
			if ns := u.GetNamespace(); ns != "" {
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
			}
			Expect(k8s.Create(ctx, u.DeepCopy(), client.DryRunAll)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
			pts, _, _ := unstructured.NestedSlice(u.Object, "spec", "policy-templates")
			for _, pt := range pts {
				def := &unstructured.Unstructured{Object: pt.(map[string]any)["objectDefinition"].(map[string]any)}
				def.SetNamespace(u.GetNamespace())
				Expect(k8s.Create(ctx, def, client.DryRunAll)).To(Succeed(), "the policy's %s", def.GetKind())
				ots, _, _ := unstructured.NestedSlice(def.Object, "spec", "object-templates")
				for _, ot := range ots {
					od := ot.(map[string]any)["objectDefinition"].(map[string]any)
					templates = append(templates, od)
				}
			}
		}
		Expect(kinds).To(And(HaveKey("Policy"), HaveKey("Placement"), HaveKey("PlacementBinding"), HaveKey("Application"), HaveKey("ApplicationSet")))
		// The policy reads the ConfigMap the autopilot keeps, and its
		// verdict follows the status: compliant exactly when healthy.
		Expect(templates).To(HaveLen(1))
		tmpl := &unstructured.Unstructured{Object: templates[0]}
		Expect(tmpl.GetName()).To(Equal(fleetstatus.Name))
		Expect(tmpl.GetNamespace()).To(Equal(operatorNamespace))
		Eventually(statusData).ShouldNot(BeNil())
		Expect(musthave(templates[0], statusData())).To(Equal(statusData()[fleetstatus.KeyHealthy] == "true"))
	})
}
