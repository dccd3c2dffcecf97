package integration

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubevirt/virt-platform-autopilot/pkg/consoleapi"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// servingCert is the console plugin server's certificate, as the service
// CA would issue it, and the pool that trusts it (the console's).
type servingCert struct {
	dir  string
	pool *x509.CertPool
}

func newServingCert() servingCert {
	GinkgoHelper()
	crt, key, err := certutil.GenerateSelfSignedCertKey("virt-platform-autopilot-console", nil, []string{"localhost"})
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "console-cert-")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600)).To(Succeed())
	DeferCleanup(os.RemoveAll, dir)
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(crt)).To(BeTrue())
	return servingCert{dir: dir, pool: pool}
}

// pluginDist is the built plugin 'make console-plugin' leaves; "" when it
// was not built (the console spec then cannot run).
func pluginDist() string {
	d := filepath.Join(repoRoot(), "console-plugin", "dist")
	if _, err := os.Stat(filepath.Join(d, "plugin-manifest.json")); err != nil {
		return ""
	}
	return d
}

// chromium is the browser the console spec drives: $CHROMIUM, else
// Debian's chromium on PATH.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	p, _ := exec.LookPath("chromium")
	return p
}

// requireConsole fails under CI, and elsewhere skips (recorded), a spec
// whose plugin build, host page or browser is missing.
func requireConsole() {
	GinkgoHelper()
	requireVendorCRDs()
	var missing []string
	if pluginDist() == "" {
		missing = append(missing, "the built plugin (make console-plugin)")
	}
	if _, err := os.Stat(filepath.Join(repoRoot(), "console-plugin", "host", "dist", "host.js")); err != nil {
		missing = append(missing, "the test host page (make console-plugin)")
	}
	if chromium() == "" {
		missing = append(missing, "a chromium browser (Debian's chromium; .ci/run installs it)")
	}
	if len(missing) == 0 {
		return
	}
	why := "needs " + strings.Join(missing, ", ")
	if os.Getenv("CI") != "" {
		Fail(why)
	}
	testenv.NotRun("integration: "+CurrentSpecReport().FullText(), why)
	Skip(why)
}

// consoleHost is what the OpenShift console's backend gives a plugin,
// against the real API server and the real autopilot: the plugin's files
// from its Service (/api/plugins/<name>/, no user token), its proxy
// (/api/proxy/plugin/<name>/<alias>/, the user's token), the Kubernetes
// API (/api/kubernetes/, the user's token), and the host page. Who is
// logged in is a cookie /login sets; each user is a service account's
// token.
type consoleHost struct {
	srv    *httptest.Server
	mu     sync.Mutex
	tokens map[string]string
}

func newConsoleHost(tokens map[string]string) *consoleHost {
	GinkgoHelper()
	h := &consoleHost{tokens: tokens}
	pluginTLS := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: consoleCert.pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}}
	plugin := func(withToken bool, prefix string) http.Handler {
		return &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(&url.URL{Scheme: "https", Host: consoleAddr})
				r.Out.URL.Path = "/" + strings.TrimPrefix(r.In.URL.Path, prefix)
				r.Out.Header.Del("Cookie")
				r.Out.Header.Del("Authorization")
				if withToken {
					r.Out.Header.Set("Authorization", "Bearer "+h.token(r.In))
				}
			},
			Transport: pluginTLS,
		}
	}
	apiTransport, err := rest.TransportFor(&rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}})
	Expect(err).NotTo(HaveOccurred())
	apiURL, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	kube := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(apiURL)
			r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, "/api/kubernetes")
			r.Out.Header.Del("Cookie")
			r.Out.Header.Set("Authorization", "Bearer "+h.token(r.In))
		},
		Transport: apiTransport,
	}
	root := filepath.Join(repoRoot(), "console-plugin")
	mux := http.NewServeMux()
	pluginPath := "/api/plugins/" + consoleapi.PluginName + "/"
	proxyPath := "/api/proxy/plugin/" + consoleapi.PluginName + "/" + consoleapi.ProxyAlias + "/"
	mux.Handle(pluginPath, plugin(false, pluginPath))
	mux.Handle(proxyPath, plugin(true, proxyPath))
	mux.Handle("/api/kubernetes/", kube)
	mux.Handle("/host/", http.StripPrefix("/host/", http.FileServer(http.Dir(filepath.Join(root, "host", "dist")))))
	mux.Handle("/pf/", http.StripPrefix("/pf/", http.FileServer(http.Dir(filepath.Join(root, "node_modules", "@patternfly", "patternfly")))))
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "user", Value: r.URL.Query().Get("user"), Path: "/"})
		http.Redirect(w, r, "/?"+r.URL.Query().Get("then"), http.StatusFound)
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(root, "host", "dist", "index.html"))
	})
	h.srv = httptest.NewServer(mux)
	DeferCleanup(h.srv.Close)
	return h
}

// token is the logged-in user's; none for a stranger to the host.
func (h *consoleHost) token(r *http.Request) string {
	c, err := r.Cookie("user")
	if err != nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tokens[c.Value]
}

// login returns the URL that logs user in and shows the view (page, tab).
func (h *consoleHost) login(user, view string) string {
	return h.srv.URL + "/login?user=" + url.QueryEscape(user) + "&then=" + url.QueryEscape("view="+view)
}
