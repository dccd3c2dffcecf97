package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/debug"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
)

// vocabularySpecs: every annotation value is understood or reported, and a
// value not understood changes nothing; dependents wait for a converged HCO.
func vocabularySpecs(ctx context.Context) {
	setHCOAnnotation := func(k, v string) string {
		return update(hcoGVK, hcoNamespace, hcoName, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, k, v) })
	}
	deschedulerRV := func() string {
		if u := get(kdGVK, deschedulerNamespace, "cluster"); u != nil {
			return u.GetResourceVersion()
		}
		return ""
	}

	It("reads a switch in its usual spellings, and a switch it does not understand leaves its objects as they are, reported on the HCO", func() {
		setHCOAnnotation(loadAware, " Yes")
		Eventually(deschedulerRV).ShouldNot(BeEmpty())
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		before := deschedulerRV()

		reconciledAt(setHCOAnnotation(loadAware, "ture"))
		Expect(outcomeOf("descheduler-loadaware")()).To(Equal(engine.Invalid))
		Expect(deschedulerRV()).To(Equal(before), "a switch not understood is not off: nothing deleted or written")
		onHCO := func() int {
			return len(events("InvalidSwitch", loadAware, `"ture"`, "accepted", "the assets that read it"))
		}
		Eventually(onHCO).Should(Equal(1))
		Expect(testutil.ToFloat64(metrics.InvalidAnnotation.WithLabelValues("HyperConverged", hcoNamespace, hcoName, loadAware, string(engine.Malformed)))).To(Equal(1.0))
		// The debug endpoint names it the same way.
		req := httptest.NewRequest(http.MethodGet, "/debug/inputs?format=json", nil)
		w := httptest.NewRecorder()
		(&debug.Server{Catalog: embedded(), Source: rec}).Handler().ServeHTTP(w, req)
		Expect(w.Code).To(Equal(http.StatusOK))
		var notices []engine.Notice
		Expect(json.Unmarshal(w.Body.Bytes(), &notices)).To(Succeed())
		Expect(notices).To(ContainElement(And(
			HaveField("Annotation", loadAware), HaveField("Reason", engine.Malformed), HaveField("Message", ContainSubstring(`"ture"`)))))
		// A standing warning is one Event, whatever else reconciles.
		reconciledAt(poke())
		reconciledAt(poke())
		Expect(onHCO()).To(Equal(1))

		setHCOAnnotation(loadAware, "OFF")
		Eventually(deschedulerRV).Should(BeEmpty())
		Expect(seriesWith(metrics.InvalidAnnotation, "annotation", loadAware)).To(Equal(0))
		setHCOAnnotation(loadAware, "")
	})

	It("leaves an object whose mode it does not understand alone, reads the opt-out in any case, and reports a misspelt switch", func() {
		revert := func() {
			update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
				Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
			})
		}
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		for _, mode := range []string{"unmanged", " UnManaged"} {
			update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Mode, mode) })
			revert()
			reconciledAt(poke())
			Expect(kernelArgs(psiMC)).To(Equal([]any{"psi=0"}), "mode %q: the object is left alone", mode)
		}
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Unmanaged))
		Expect(events("InvalidMode", psiMC, `"unmanged"`)).NotTo(BeEmpty())

		update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Mode, "") })
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))

		setHCOAnnotation("platform.kubevirt.io/enable-loadawre", "true")
		Eventually(func() int { return len(events("UnknownAnnotation", "enable-loadawre")) }).Should(Equal(1))
		Expect(deschedulerRV()).To(BeEmpty(), "a misspelt switch turns nothing on")
		setHCOAnnotation("platform.kubevirt.io/enable-loadawre", "")
	})

	It("keeps the HCO's dependents as last applied while the HCO has not converged, and renders them again once it has", func() {
		setHCOAnnotation(loadAware, "true")
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		// A patch on the HCO that is not understood: the golden config is
		// Invalid, the HCO left as it is.
		setHCOAnnotation(annotations.Patch, `[{"op":"replace","path":"/kind","value":"X"}]`)
		Eventually(outcomeOf("hco-golden-config")).Should(Equal(engine.Invalid))
		Eventually(func() string { return status("descheduler-loadaware").Reason }).Should(ContainSubstring("waiting for the HyperConverged to converge"))

		edited := update(kdGVK, deschedulerNamespace, "cluster", "kubectl-edit", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedField(u.Object, int64(3600), "spec", "deschedulingIntervalSeconds")).To(Succeed())
		})
		reconciledAt(poke())
		Expect(deschedulerRV()).To(Equal(edited), "a dependent is not rendered from an HCO that has not converged")
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Unchanged), "what does not read the HCO proceeds")

		setHCOAnnotation(annotations.Patch, "")
		Eventually(func() int64 {
			return nestedInt(get(kdGVK, deschedulerNamespace, "cluster"), "spec", "deschedulingIntervalSeconds")
		}).Should(Equal(int64(60)))
		setHCOAnnotation(loadAware, "")
		Eventually(deschedulerRV).Should(BeEmpty())
	})
}
