package integration

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/tlsprofile"
)

// handshake dials the metrics endpoint offering at most version max and,
// when given, only ciphers (TLS 1.2 and older).
func handshake(max uint16, ciphers ...uint16) error { return handshakeAt(metricsAddr, max, ciphers...) }

// handshakeAt is handshake with the metrics endpoint at addr.
func handshakeAt(addr string, max uint16, ciphers ...uint16) error {
	cfg := &tls.Config{InsecureSkipVerify: true, MaxVersion: max, CipherSuites: ciphers} //nolint:gosec // the endpoint's self-signed certificate; only the handshake is judged
	c, err := tls.Dial("tcp", addr, cfg)
	if err == nil {
		_ = c.Close()
	}
	return err
}

func tlsSpecs(ctx context.Context) {
	It("serves the cluster's TLS profile on its metrics endpoint, follows a change without a restart, and says which", func() {
		requireVendorCRDs()
		profile := func() string { return rec.Snapshot().Health.TLSProfile }
		// Without the APIServer kind (plain Kubernetes): Intermediate.
		Eventually(profile).Should(HavePrefix("Intermediate"))
		Eventually(func() error { return handshake(tls.VersionTLS12) }).Should(Succeed(), "the endpoint is up")
		Expect(handshake(tls.VersionTLS11)).NotTo(Succeed(), "Intermediate refuses TLS 1.1")

		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "0000_10_config-operator_01_apiservers-Default.crd.yaml")))
		as := newObj(tlsprofile.APIServerGVK, "", tlsprofile.APIServerName)
		Expect(unstructured.SetNestedMap(as.Object, map[string]any{"type": "Modern", "modern": map[string]any{}}, "spec", "tlsSecurityProfile")).To(Succeed())
		Expect(k8s.Create(ctx, as)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, as))).To(Succeed())
			Eventually(profile).Should(HavePrefix("Intermediate"))
		})
		Eventually(profile).Should(HavePrefix("Modern"))
		Expect(handshake(tls.VersionTLS12)).NotTo(Succeed(), "Modern refuses TLS 1.2")
		Expect(handshake(tls.VersionTLS13)).To(Succeed())
		Expect(logs.find(map[string]string{"msg": "TLS profile served", "action": "report"})).NotTo(BeEmpty())

		// Custom: only the suites it names, whatever the certificate's key.
		update(tlsprofile.APIServerGVK, "", tlsprofile.APIServerName, "admin", func(u *unstructured.Unstructured) {
			Expect(unstructured.SetNestedMap(u.Object, map[string]any{"type": "Custom", "custom": map[string]any{
				"ciphers":       []any{"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
				"minTLSVersion": "VersionTLS12",
			}}, "spec", "tlsSecurityProfile")).To(Succeed())
		})
		Eventually(profile).Should(HavePrefix("Custom"))
		Expect(handshake(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384)).To(Succeed())
		err := handshake(tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
		Expect(err).To(HaveOccurred(), "a suite the profile does not name")
		Expect(strings.ToLower(err.Error())).To(ContainSubstring("handshake"))
	})

	It("serves the cluster's TLS profile on a standby replica too, following a change while it does not lead", func() {
		requireVendorCRDs()
		installLeaderElectionRBAC(ctx)
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "openshift", "0000_10_config-operator_01_apiservers-Default.crd.yaml")))
		stopManager()
		a := startReplica(replicaOptions{log: &requestLog{}, leaderElect: true, lease: quickHandover})
		b := startReplica(replicaOptions{log: &requestLog{}, leaderElect: true, lease: quickHandover})
		DeferCleanup(func() {
			a.stop()
			b.stop()
			startManager()
		})
		var standby replica
		Eventually(func() bool {
			switch {
			case !a.rec.Snapshot().Health.LastReconcile.IsZero():
				standby = b
			case !b.rec.Snapshot().Health.LastReconcile.IsZero():
				standby = a
			default:
				return false
			}
			return true
		}).WithTimeout(60 * time.Second).Should(BeTrue())
		profile := func() string { return standby.rec.Snapshot().Health.TLSProfile }
		Eventually(func() error { return handshakeAt(standby.metrics, tls.VersionTLS12) }).Should(Succeed(), "the standby's endpoint is up, Intermediate")

		as := newObj(tlsprofile.APIServerGVK, "", tlsprofile.APIServerName)
		Expect(unstructured.SetNestedMap(as.Object, map[string]any{"type": "Modern", "modern": map[string]any{}}, "spec", "tlsSecurityProfile")).To(Succeed())
		Expect(k8s.Create(ctx, as)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, as))).To(Succeed()) })
		Eventually(profile).Should(HavePrefix("Modern"))
		Expect(standby.rec.Snapshot().Health.LastReconcile.IsZero()).To(BeTrue(), "it still does not lead")
		Expect(handshakeAt(standby.metrics, tls.VersionTLS12)).NotTo(Succeed(), "Modern refuses TLS 1.2 on the standby")
		Expect(handshakeAt(standby.metrics, tls.VersionTLS13)).To(Succeed())

		Expect(k8s.Delete(ctx, as)).To(Succeed())
		Eventually(profile).Should(HavePrefix("Intermediate"), "the object gone: Intermediate again")
	})
}
