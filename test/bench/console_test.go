//go:build bench

package bench

// The console plugin's costs: its bundle as the console downloads it, and
// its API's latency as a console user sees it, at scale.

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubevirt/virt-platform-autopilot/pkg/consoleapi"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// pluginSize records the built plugin's size, gzipped as served: what the
// console fetches first (the manifest and the entry script), and all of
// its files (shared modules are the console's: none is in dist).
func (b *bench) pluginSize() {
	dist := filepath.Join(testenv.RepoRoot(), "console-plugin", "dist")
	raw, err := os.ReadFile(filepath.Join(dist, "plugin-manifest.json"))
	if err != nil {
		b.t.Fatalf("the console plugin is not built (make console-plugin): %v", err)
	}
	var m struct {
		LoadScripts []string `json:"loadScripts"`
	}
	b.must(json.Unmarshal(raw, &m))
	gz := func(name string) float64 {
		data, err := os.ReadFile(filepath.Join(dist, name))
		b.must(err)
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(data)
		_ = w.Close()
		return float64(buf.Len()) / 1024
	}
	first := gz("plugin-manifest.json")
	for _, s := range m.LoadScripts {
		first += gz(s)
	}
	all := 0.0
	entries, err := os.ReadDir(dist)
	b.must(err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") || strings.HasSuffix(e.Name(), ".json") {
			all += gz(e.Name())
		}
	}
	b.results["console_plugin_entry_gzip_kib"] = first
	b.results["console_plugin_all_gzip_kib"] = all
}

// consoleCert is the console server's certificate for the processes the
// scale run starts, and a client trusting it.
type consoleCert struct {
	dir    string
	client *http.Client
}

func newConsoleCert(b *bench) consoleCert {
	crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", nil, []string{"localhost"})
	b.must(err)
	dir := b.t.TempDir()
	b.must(os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600))
	b.must(os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	return consoleCert{dir: dir, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}}}}
}

// consoleToken is a token of a user who may get the HCO (a console
// viewer), made once.
func (b *bench) consoleToken() string {
	const ns = "console-bench"
	create := func(err error) {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.t.Fatal(err)
		}
	}
	create(b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	create(b.c.Create(b.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: ns}}))
	create(b.c.Create(b.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "console-bench", Namespace: "openshift-cnv"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"hco.kubevirt.io"}, Resources: []string{"hyperconvergeds"}, Verbs: []string{"get"}}}}))
	create(b.c.Create(b.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "console-bench", Namespace: "openshift-cnv"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "console-bench"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "viewer", Namespace: ns}}}))
	cs, err := kubernetes.NewForConfig(b.cfg)
	b.must(err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(b.ctx, "viewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	b.must(err)
	return tr.Status.Token
}

// consoleLatency times n requests of path to the process's console API as
// a viewer, one after another (the first, which reviews the token, not
// counted): the first's time, and the median and p99 of the others, in ms.
func (b *bench) consoleLatency(cert consoleCert, addr, token, path string, n int) (first, p50, p99 float64) {
	get := func() time.Duration {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
		b.must(err)
		req.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		resp, err := cert.client.Do(req)
		b.must(err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return time.Since(t0)
	}
	first = ms(get())
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = get()
	}
	slices.Sort(ds)
	return first, ms(ds[n/2]), ms(ds[(n*99)/100])
}

// consoleAPI measures the overview and a switch's preview.
func (b *bench) consoleAPI(cert consoleCert, addr, token string, p *scalePoint) {
	_, p.ConsoleOverviewP50Ms, p.ConsoleOverviewP99Ms = b.consoleLatency(cert, addr, token, consoleapi.OverviewPath, 100)
	// Turning PCI passthrough off (the bench's HCO has every switch on):
	// its MachineConfig's deletion reboots the worker pool, so each
	// preview lists the pool's N VMIs.
	path := consoleapi.PreviewPath + "?annotation=platform.kubevirt.io/enable-pci-passthrough"
	p.ConsolePreviewFirstMs, p.ConsolePreviewP50Ms, p.ConsolePreviewP99Ms = b.consoleLatency(cert, addr, token, path, 20)
	var pv consoleapi.Preview
	b.must(json.Unmarshal(b.consoleGet(cert, addr, token, path), &pv))
	if len(pv.Pools) == 0 {
		b.t.Fatalf("the preview measured rolls no pool: %+v", pv)
	}
}

// consoleGet is one request's body.
func (b *bench) consoleGet(cert consoleCert, addr, token, path string) []byte {
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	b.must(err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := cert.client.Do(req)
	b.must(err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	b.must(err)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("GET %s: %s %s", path, resp.Status, body)
	}
	return body
}
