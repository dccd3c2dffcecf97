// Package integration runs the real autopilot manager (real cache, real
// watches) against a real kube-apiserver and etcd started by envtest.
package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/controller"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const (
	hcoNamespace         = "openshift-cnv"
	deschedulerNamespace = "openshift-kube-descheduler-operator"
	// operatorNamespace is where config/default deploys the autopilot.
	operatorNamespace = "virt-platform-autopilot-system"
)

var (
	testEnv     *envtest.Environment
	cfg         *rest.Config
	k8s         client.Client // direct client: what a user or another operator does
	suiteCtx    context.Context
	cancelSuite context.CancelFunc

	mgrCancel context.CancelFunc
	mgrDone   chan struct{}
	rec       *controller.Reconciler

	// probeAddr serves the running manager's /healthz and /readyz;
	// metricsAddr its /metrics, over HTTPS with authn/authz as deployed;
	// consoleAddr the console plugin and its API, over TLS with the
	// certificate in consoleCert.
	probeAddr, metricsAddr, consoleAddr string
	consoleCert                         servingCert

	// requests counts the API requests the manager makes.
	requests = &requestLog{}

	// logs keeps every log line the managers write.
	logs = &logLines{}

	// testThrottle makes a field fight observable in seconds.
	testThrottle = throttle.Config{Burst: 3, Refill: 4 * time.Second}
)

func TestIntegration(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run 'make test' (it builds kube-apiserver and etcd with 'make envtest')")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Autopilot integration suite")
}

var _ = BeforeSuite(func() {
	// JSON lines, as deployed, so specs can read the action log.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, logs))))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	suiteCtx, cancelSuite = context.WithCancel(context.Background())

	var err error
	testEnv, cfg, k8s, err = testenv.Start(baseCRDs())
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = 200, 400

	for _, ns := range []string{hcoNamespace, deschedulerNamespace, operatorNamespace} {
		Expect(k8s.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metaName(ns)})).To(Succeed())
	}
	// The manager runs as the service account bound to the generated role
	// (config/rbac), so anything the role forgets fails these tests.
	role := &rbacv1.ClusterRole{}
	readYAML(filepath.Join(repoRoot(), "config", "rbac", "role.yaml"), role)
	binding := &rbacv1.ClusterRoleBinding{}
	readYAML(filepath.Join(repoRoot(), "config", "rbac", "role_binding.yaml"), binding)
	Expect(k8s.Create(suiteCtx, role)).To(Succeed())
	Expect(k8s.Create(suiteCtx, binding)).To(Succeed())
	// The fleet status ConfigMap, in the autopilot's own namespace.
	installNamespacedRBAC(suiteCtx, "status_role.yaml")
	// The console plugin server's serving certificate (on OpenShift, the
	// service CA's).
	consoleCert = newServingCert()
	// The admission policy bounding its writes (config/rbac): every spec
	// runs under it, so anything the catalog writes that it refuses fails.
	installAdmissionPolicy(suiteCtx)
	if vendorDir() == "" {
		if os.Getenv("CI") != "" {
			Fail("VENDOR_CRDS is unset under CI: .ci/run sets it to ../shared/crds")
		}
		GinkgoWriter.Println("VENDOR_CRDS unset: using the minimal CRDs in test/crds")
		testenv.NotRun("integration suite", "runs on the minimal CRDs in test/crds, not the vendors' (VENDOR_CRDS)")
	} else {
		GinkgoWriter.Println("using vendor CRDs from", vendorDir())
	}
})

var _ = AfterSuite(func() {
	stopManager()
	if cancelSuite != nil {
		cancelSuite()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// clockShift moves the autopilot's clock (disruption windows, pool waits)
// ahead of the real one, so a spec reaches a window's opening in seconds.
var clockShift atomic.Int64

func shiftedNow() time.Time { return time.Now().Add(time.Duration(clockShift.Load())) }

// startManager runs a fresh autopilot manager, as a new pod would.
func startManager() {
	r := startReplica(replicaOptions{log: requests})
	rec, mgrCancel, mgrDone = r.rec, r.cancel, r.done
}

// replica is one running autopilot process.
type replica struct {
	rec    *controller.Reconciler
	cancel context.CancelFunc
	done   chan struct{}
	// metrics is its metrics endpoint's address.
	metrics string
}

// replicaOptions shape one autopilot process.
type replicaOptions struct {
	log         *requestLog // every request goes through it
	leaderElect bool
	lease       app.LeaseTimings // zero: the cluster's defaults
	host        string           // the API server address, when not cfg.Host (a proxy)
}

// startReplica runs an autopilot manager.
func startReplica(o replicaOptions) replica {
	mcfg := rest.CopyConfig(cfg)
	mcfg.WrapTransport = o.log.wrap
	if o.host != "" {
		mcfg.Host = o.host
	}
	mcfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operatorNamespace + ":virt-platform-autopilot"}
	probeAddr, metricsAddr, consoleAddr = freeAddr(), freeAddr(), freeAddr()
	mgr, r, err := app.NewManager(mcfg, app.Config{
		Namespace: hcoNamespace, Throttle: testThrottle, Resync: time.Hour, ProbeBindAddress: probeAddr,
		UnwatchedPoll: 2 * time.Second, SettlePeriod: testSettle, Now: shiftedNow,
		MetricsBindAddress: metricsAddr, MetricsSecure: true,
		ConsoleBindAddress: consoleAddr, ConsoleCertDir: consoleCert.dir, ConsolePluginDir: pluginDist(),
		LeaderElection: o.leaderElect, LeaderElectionNamespace: operatorNamespace, Lease: o.lease,
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(suiteCtx)
	rp := replica{rec: r, cancel: cancel, done: make(chan struct{}), metrics: metricsAddr}
	console := consoleAddr // the globals name the latest replica
	go func() {
		defer GinkgoRecover()
		defer close(rp.done)
		Expect(mgr.Start(ctx)).To(Succeed(), "the replica serving metrics on %s and the console on %s ended with an error", rp.metrics, console)
	}()
	return rp
}

// stopManager stops the running manager and waits until it has exited.
func stopManager() {
	if mgrCancel == nil {
		return
	}
	mgrCancel()
	Eventually(mgrDone).WithTimeout(app.ShutdownTimeout + 10*time.Second).Should(BeClosed())
	mgrCancel = nil
}

// stop stops the replica and waits until it has exited.
func (r replica) stop() {
	r.cancel()
	// A stop may wait for client-go's backoff (app.ShutdownTimeout).
	Eventually(r.done).WithTimeout(app.ShutdownTimeout + 10*time.Second).Should(BeClosed())
}

// requestLog records the manager's API requests other than watches (a
// watch is one long-lived stream per kind, not a per-reconcile cost) and
// events (sent asynchronously, possibly for an earlier reconcile; that a
// quiet reconcile records none is unit-tested in pkg/controller).
type requestLog struct {
	mu   sync.Mutex
	reqs []string
	// fault, when set, is the HTTP status every request but watches and
	// leases is answered with, without reaching the API server: a proxy
	// in front of an overloaded or failing control plane.
	fault atomic.Int32
	// before, when set, runs before each request but watches reaches the
	// API server: another actor's change landing between the autopilot's
	// read and its write.
	before atomic.Pointer[func(*http.Request)]
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		watch := req.URL.Query().Get("watch") == "true"
		lease := strings.Contains(req.URL.Path, "/leases")
		if !watch && !strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") && !lease {
			l.mu.Lock()
			entry := req.Method + " " + req.URL.Path
			if req.URL.Query().Has("dryRun") {
				entry += " (dry-run)" // asks, writes nothing
			}
			l.reqs = append(l.reqs, entry)
			l.mu.Unlock()
		}
		if f := l.before.Load(); f != nil && !watch {
			(*f)(req)
		}
		if code := int(l.fault.Load()); code != 0 && !watch && !lease {
			body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected fault","code":%d}`, code)
			h := http.Header{"Content-Type": []string{"application/json"}}
			if code == http.StatusTooManyRequests {
				h.Set("Retry-After", "1")
			}
			return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
		}
		return rt.RoundTrip(req)
	})
}

// writes returns the write requests in reqs: anything but a GET or a
// review (SelfSubjectReview, SubjectAccessReview...: a POST the API server
// answers without storing anything, such as the identity the autopilot
// asks for again while it does not know it).
func writes(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		review := strings.HasPrefix(r, "POST /apis/authentication.k8s.io/") || strings.HasPrefix(r, "POST /apis/authorization.k8s.io/")
		if !strings.HasPrefix(r, "GET ") && !review {
			out = append(out, r)
		}
	}
	return out
}

// since returns the requests recorded after mark (a previous len).
func (l *requestLog) since(mark int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs[mark:]...)
}

func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func readYAML(path string, into any) {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(raw, into)).To(Succeed(), "decode %s", path)
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr() string {
	a, err := testenv.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	return a
}
