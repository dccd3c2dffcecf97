package integration

import (
	"context"
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// pacingSpecs: a failing asset is retried on its own backoff, whatever
// triggers the reconcile; the rest of the catalog proceeds.
func pacingSpecs(ctx context.Context) {
	It("retries a refused create only when its backoff expires, however often the HCO triggers a reconcile", func() {
		Eventually(func() []any { return kernelArgs(psiMC) }).Should(Equal([]any{"psi=1"}))
		// An admission policy refuses creating the psi MachineConfig, as a
		// webhook or a policy engine of the cluster's could.
		policy := &admissionv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "refuse-psi"},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionv1.Fail),
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create},
						Rule:       admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"*"}, Resources: []string{"machineconfigs"}},
					},
				}}},
				Validations: []admissionv1.Validation{{Expression: "object.metadata.name != '" + psiMC + "'", Message: "refused by policy"}},
			},
		}
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "refuse-psi"},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "refuse-psi", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			Expect(k8s.Delete(ctx, binding)).To(Succeed())
			Expect(k8s.Delete(ctx, policy)).To(Succeed())
			// Back once the policy is gone and the backoff expires (at most
			// the few seconds it grew to here).
			Eventually(func() []any { return kernelArgs(psiMC) }).WithTimeout(60 * time.Second).Should(Equal([]any{"psi=1"}))
		})
		// The policy is enforced once the API server has loaded it.
		Eventually(func() error {
			probe := newObj(mcGVK, "", psiMC)
			return k8s.Create(ctx, probe, client.DryRunAll)
		}).Should(MatchError(ContainSubstring("refused by policy")))

		Expect(k8s.Delete(ctx, get(mcGVK, "", psiMC))).To(Succeed())
		Eventually(outcomeOf("psi-enable")).Should(Equal(engine.Refused))
		Expect(status("psi-enable").Reason).To(ContainSubstring("refused by policy"))

		// Many reconciles, each triggered by an HCO edit and each seen
		// through (the reconcile started from that HCO finished): the
		// refused asset is tried only when its backoff (1s, 2s, 4s...)
		// expires, not on every reconcile.
		start, mark := time.Now(), requests.mark()
		for range 15 {
			rv := poke()
			reconciledAt(rv)
		}
		window := time.Since(start)
		tries := 0
		for _, r := range requests.since(mark) {
			if strings.HasSuffix(r, "/machineconfigs/"+psiMC) {
				tries++
			}
		}
		// Tries fit the backoff schedule in the window, plus the one that
		// may be under way at its start; each is at most a read and an
		// apply. Held, an asset costs no request at all.
		maxTries := int(math.Log2(window.Seconds()+1)) + 2
		Expect(tries).To(BeNumerically("<=", 2*maxTries), "requests for %s over %d reconciles in %s", psiMC, 15, window)
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Refused))
	})
}
