package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
)

// previewSpecs run inside the ordered suite: render --output diff runs
// the controller's planner and judge with an executor that sends
// nothing, so what it says will go, goes, and what it says is held, is
// held, over the states a cluster can be in.
func previewSpecs(ctx context.Context) {
	It("says with render --output diff what the controller then does, over generated states of window, exclusions and drift", func() {
		const tomb = "50-swap-enable"
		psiKey := "MachineConfig.machineconfiguration.openshift.io/" + psiMC
		tombKey := "MachineConfig.machineconfiguration.openshift.io/" + tomb
		kc := writeKubeconfig(GinkgoT().TempDir())
		h := time.Now().UTC().Hour()
		windows := map[string]string{
			"none":   "",
			"open":   fmt.Sprintf("daily %02d:00-%02d:00 UTC", (h+23)%24, (h+2)%24),
			"closed": fmt.Sprintf("daily %02d:00-%02d:00 UTC", (h+6)%24, (h+7)%24),
		}
		exclusions := map[string]string{
			"none":           "",
			"not understood": "machineconfigs/" + tomb,
			"psi excluded":   "MachineConfig/" + psiMC,
		}
		seen := map[string]bool{}
		for wn, window := range windows {
			for en, exclusion := range exclusions {
				name := "window " + wn + ", exclusion " + en
				stopManager()
				update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
					setAnnotation(u, annotations.DisruptionWindow, window)
					setAnnotation(u, annotations.DisabledResources, exclusion)
				})
				update(mcGVK, "", psiMC, "kubectl-edit", func(u *unstructured.Unstructured) {
					Expect(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")).To(Succeed())
				})
				old := newObj(mcGVK, "", tomb)
				old.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
				Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(old), client.FieldOwner(annotations.FieldManager))).To(Succeed())

				var out, errOut bytes.Buffer
				code := cluster.Render([]string{"--kubeconfig", kc, "--namespace", hcoNamespace, "--output", "diff"}, &out, &errOut)
				Expect(code).To(BeElementOf(0, 1, 3), "%s: %s", name, errOut.String())
				goes := func(key, change string) bool {
					for _, l := range strings.Split(out.String(), "\n") {
						if strings.HasPrefix(l, key+" "+change) {
							return !strings.Contains(l, "[staged") && !strings.Contains(l, "[held")
						}
					}
					return false
				}
				psiGoes, tombGoes := goes(psiKey, "changed"), goes(tombKey, "deleted")
				seen[fmt.Sprint(psiGoes, tombGoes)] = true

				startManager()
				reconciledSince(poke())
				reconciledSince(poke())
				if psiGoes {
					Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}), "%s: the diff said the correction goes\n%s", name, out.String())
				} else {
					Consistently(func() []any { return kernelArgs(psiMC) }).WithTimeout(time.Second).Should(Equal([]any{"psi=0"}), "%s: the diff said the correction is held\n%s", name, out.String())
				}
				if tombGoes {
					Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", tomb) }).Should(BeNil(), "%s: the diff said the tombstone goes\n%s", name, out.String())
				} else {
					Consistently(func() *unstructured.Unstructured { return get(mcGVK, "", tomb) }).WithTimeout(time.Second).ShouldNot(BeNil(), "%s: the diff said the tombstone is held\n%s", name, out.String())
				}
			}
		}
		// Back to the suite's state: nothing held, both converge.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.DisruptionWindow, "")
			setAnnotation(u, annotations.DisabledResources, "")
		})
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", tomb) }).Should(BeNil())
		// The states exercised both answers of each prediction.
		Expect(seen).To(HaveKey("true true"))
		Expect(seen).To(HaveKey("false false"))
		Expect(seen).To(HaveKey("false true"))
	})
}
