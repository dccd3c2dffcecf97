package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/metricsauth"
)

// The metrics filter on its own, against the real API server's
// TokenReview and SubjectAccessReview, with TTLs short enough to watch a
// revoked token stop working.
var _ = Describe("metricsauth filter", func() {
	const ns = "metricsauth-spec"

	It("serves metrics to a bound service account only, and refuses its token once the account is deleted", func(ctx SpecContext) {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)})).To(Succeed())
		role := &rbacv1.ClusterRole{
			ObjectMeta: metaName("metricsauth-spec-reader"),
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metaName("metricsauth-spec-reader"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
		}
		for _, o := range []client.Object{role, binding} {
			Expect(k8s.Create(ctx, o)).To(Succeed())
			DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
		}

		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		token := func(name string) string {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			Expect(k8s.Create(ctx, sa)).To(Succeed())
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		scraper, stranger := token("scraper"), token("stranger")

		httpClient, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		provider := metricsauth.Filter(metricsauth.Options{AuthnTTL: 2 * time.Second, AllowTTL: 2 * time.Second, DenyTTL: time.Second, MaxEntries: 16})
		filter, err := provider(cfg, httpClient)
		Expect(err).NotTo(HaveOccurred())
		h, err := filter(GinkgoLogr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
		Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(h)
		DeferCleanup(srv.Close)

		scrape := func(authorization string) int {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/metrics", nil)
			Expect(err).NotTo(HaveOccurred())
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			resp, err := srv.Client().Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			return resp.StatusCode
		}

		Expect(scrape("")).To(Equal(http.StatusUnauthorized), "no token")
		Expect(scrape("Bearer ")).To(Equal(http.StatusUnauthorized), "empty token")
		Expect(scrape("Bearer not-a-token")).To(Equal(http.StatusUnauthorized), "a token the API server does not know")
		Expect(scrape("Bearer "+stranger)).To(Equal(http.StatusForbidden), "authenticated but not bound")
		// The API server's RBAC cache may lag the binding; denials are cached 1 s here.
		Eventually(func() int { return scrape("Bearer " + scraper) }).Should(Equal(http.StatusOK), "bound")
		Expect(scrape("bearer "+scraper)).To(Equal(http.StatusOK), "the scheme is case-insensitive")

		// Revoked: a bound token dies with its service account; the 401 (not
		// 403) shows the TokenReview refused it.
		Expect(k8s.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: ns}})).To(Succeed())
		Eventually(func() int { return scrape("Bearer " + scraper) }).WithTimeout(30*time.Second).Should(Equal(http.StatusUnauthorized), "token of a deleted service account")
	})
})
