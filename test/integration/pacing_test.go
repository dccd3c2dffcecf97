package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
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
		// expires, not on every reconcile. Judged on the times of the
		// tries, not on how many fit in the spec's wall time: each comes
		// at least the minimum backoff after the one before, and the
		// gaps grow.
		var mu sync.Mutex
		var tries []time.Time
		record := func(req *http.Request) {
			if req.Method != http.MethodGet && strings.HasSuffix(req.URL.Path, "/machineconfigs/"+psiMC) && !req.URL.Query().Has("dryRun") {
				mu.Lock()
				tries = append(tries, time.Now())
				mu.Unlock()
			}
		}
		requests.before.Store(&record)
		DeferCleanup(func() { requests.before.Store(nil) })
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(tries)
		}
		pokes := 0
		for pokes < 15 || count() < 3 {
			// At least three tries (two gaps, so growth is judged),
			// bounded: 1 s + 2 s + 4 s of backoff come well within it.
			Expect(pokes).To(BeNumerically("<", 400), "three tries of the refused create (%d so far)", count())
			rv := poke()
			reconciledAt(rv)
			pokes++
		}
		requests.before.Store(nil)
		mu.Lock()
		defer mu.Unlock()
		Expect(len(tries)).To(BeNumerically("<=", pokes/2), "tried on its backoff, not on each of %d reconciles", pokes)
		var gaps []time.Duration
		for i := 1; i < len(tries); i++ {
			gaps = append(gaps, tries[i].Sub(tries[i-1]))
		}
		for i, g := range gaps {
			Expect(g).To(BeNumerically(">=", 900*time.Millisecond), "try %d came %s after the one before: %v", i+1, g, gaps)
			if i > 0 {
				Expect(g).To(BeNumerically(">=", gaps[i-1]-250*time.Millisecond), "the backoff grows: %v", gaps)
			}
		}
		Expect(outcomeOf("psi-enable")()).To(Equal(engine.Refused))
	})
}
