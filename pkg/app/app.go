// Package app assembles the controller manager: scheme, scoped cache,
// reconciler, probes and servers. The binary and the integration tests
// build the manager through it, so tests run exactly what ships.
package app

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/clusterread"
	"github.com/kubevirt/virt-platform-autopilot/pkg/consoleapi"
	"github.com/kubevirt/virt-platform-autopilot/pkg/controller"
	"github.com/kubevirt/virt-platform-autopilot/pkg/debug"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metricsauth"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tlsprofile"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// ShutdownTimeout bounds a stop: the manager waits this long for its
// runnables to end (config/manager's terminationGracePeriodSeconds is
// above it).
const ShutdownTimeout = 75 * time.Second

// Config are the manager's settings (the run command's flags).
type Config struct {
	Namespace          string
	MetricsBindAddress string
	ProbeBindAddress   string
	DebugBindAddress   string
	// DebugAllowRemote serves the unauthenticated debug endpoints on a
	// non-loopback address; off by default.
	DebugAllowRemote bool
	// MetricsSecure serves metrics over HTTPS, authenticating and
	// authorizing every scrape against the API server.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for secure metrics (on
	// OpenShift: the service CA's serving certificate, so Prometheus can
	// verify it); empty: a self-signed certificate.
	MetricsCertDir string
	// ConsoleBindAddress serves the console plugin (its files and its
	// API, pkg/consoleapi) over TLS; "" or "0": not served.
	ConsoleBindAddress string
	// ConsoleCertDir holds the plugin server's tls.crt and tls.key (the
	// service CA's serving certificate); required with the address.
	ConsoleCertDir string
	// ConsolePluginDir holds the built plugin; "": the API alone.
	ConsolePluginDir string
	LeaderElection   bool
	// LeaderElectionNamespace holds the leader lease; empty: Namespace.
	// The fleet status ConfigMap lives there too (the autopilot's own
	// namespace).
	LeaderElectionNamespace string
	// Lease: the leader lease's durations; a zero field takes the
	// cluster's default (OpenShift's conventions, by its topology).
	Lease LeaseTimings
	// Version is the autopilot's version, in the fleet status.
	Version       string
	Resync        time.Duration
	UnwatchedPoll time.Duration
	// SettlePeriod: how long a derived fact must hold before a
	// reboot-causing write it asks for (0: the default, negative: none).
	SettlePeriod time.Duration
	// Now is the clock of disruption windows and pool waits; nil is
	// time.Now (tests shift it to reach a window's opening).
	Now      func() time.Time
	Throttle throttle.Config
	// Catalog and Templates replace the embedded catalog, its templates and
	// tombstones (none), for benchmarks that scale the number of assets.
	Catalog   *catalog.Catalog
	Templates fs.FS
}

// Scheme holds the typed kinds the autopilot reads; managed kinds are
// handled as unstructured objects, so no third-party Go types are needed.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	// VMI pages decode into the few fields a rollout's impact reads.
	if err := impact.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// LoadEmbedded loads the embedded catalog and tombstones.
func LoadEmbedded() (*catalog.Catalog, []tombstone.Tombstone, error) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return nil, nil, err
	}
	ts, err := tombstone.Load(assets.FS, assets.TombstonesDir)
	if err != nil {
		return nil, nil, err
	}
	return cat, ts, nil
}

// NewManager builds a manager running the autopilot reconciler.
func NewManager(cfg *rest.Config, c Config) (manager.Manager, *controller.Reconciler, error) {
	cat, ts, err := LoadEmbedded()
	if err != nil {
		return nil, nil, err
	}
	var templates fs.FS = assets.FS
	if c.Catalog != nil {
		cat, ts, templates = c.Catalog, nil, c.Templates
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	metrics := metricsserver.Options{BindAddress: orDisabled(c.MetricsBindAddress)}
	// One client for the reads made once before the manager starts.
	var boot client.Client
	var bootErr error
	if c.MetricsSecure || c.consoleOn() || c.LeaderElection {
		boot, bootErr = client.New(cfg, client.Options{})
	}
	var tlsServed *tlsprofile.Served
	if c.MetricsSecure || c.consoleOn() {
		// The cluster's TLS profile: read once before anything is served
		// (every replica, the leader or not), then followed by the
		// reconciler from APIServer/cluster.
		tlsServed = tlsprofile.NewServed(initialTLS(boot, bootErr))
	}
	if c.MetricsSecure {
		metrics.TLSOpts = append(metrics.TLSOpts, tlsServed.TLSOpt())
		metrics.SecureServing = true
		metrics.FilterProvider = metricsauth.Filter(metricsauth.DefaultOptions())
		if c.MetricsCertDir != "" {
			metrics.CertDir, metrics.CertName, metrics.KeyName = c.MetricsCertDir, "tls.crt", "tls.key"
		}
	}
	// How each CRD merges, kept by the cache's transform as it drops the
	// schemas, read by every reconcile as typed data.
	structures := structure.NewStore()
	opts := ctrl.Options{
		Scheme:                  Scheme(),
		Cache:                   clusterread.CacheOptions(cat, structures),
		Metrics:                 metrics,
		HealthProbeBindAddress:  orDisabled(c.ProbeBindAddress),
		LeaderElection:          c.LeaderElection,
		LeaderElectionID:        "virt-platform-autopilot.kubevirt.io",
		LeaderElectionNamespace: c.leaseNamespace(),
		// A replica that shuts down hands the lease over instead of letting
		// it expire: the standby takes it within one retry period, not a
		// lease duration. Safe because the manager stops every writer
		// before it releases.
		LeaderElectionReleaseOnCancel: true,
		// Long enough for every runnable to end on its own, so a stop
		// releases the lease cleanly instead of failing: an informer whose
		// streaming list was refused (connection refused, 429) sleeps its
		// backoff without watching for the stop, up to 60s (client-go
		// tools/cache/reflector.go, Reflector.watchList: the delay of
		// isErrorRetriableWithSideEffectsFn, capped at 30s with a jitter
		// of 1.0). Below the Deployment's terminationGracePeriodSeconds.
		GracefulShutdownTimeout: ptr.To(ShutdownTimeout),
		// One controller per process; a restart inside one process (tests)
		// must not trip the duplicate-name guard.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if c.LeaderElection {
		lease := leaseFor(c.Lease, boot, bootErr)
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = &lease.Duration, &lease.RenewDeadline, &lease.RetryPeriod
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("create manager: %w", err)
	}
	r, err := controller.Setup(mgr, controller.Options{
		Namespace:     c.Namespace,
		Catalog:       cat,
		Renderer:      render.New(templates),
		Tombstones:    ts,
		Throttle:      c.Throttle,
		Resync:        c.Resync,
		UnwatchedPoll: c.UnwatchedPoll,
		SettlePeriod:  c.SettlePeriod,
		Now:           c.Now,
		Structures:    structures,
		// Operand images: the Deployment's, as OLM sets them; a change
		// rolls a new pod.
		Images:          rendercontext.ImagesFromEnv(os.Environ()),
		StatusNamespace: c.leaseNamespace(),
		Version:         c.Version,
		TLS:             tlsServed,
	})
	if err != nil {
		return nil, nil, err
	}
	if c.debugOn() {
		if err := mgr.Add(&debug.Server{Addr: c.DebugBindAddress, Catalog: cat, Source: r}); err != nil {
			return nil, nil, err
		}
	}
	if c.consoleOn() {
		reviewer, err := metricsauth.NewReviewer(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return nil, nil, err
		}
		if err := mgr.Add(&consoleapi.Server{Addr: c.ConsoleBindAddress, CertDir: c.ConsoleCertDir, PluginDir: c.ConsolePluginDir,
			Namespace: c.Namespace, Catalog: cat, Source: r, Reviewer: reviewer, TLS: tlsServed, Auth: metricsauth.DefaultOptions(),
			Log: ctrl.Log.WithName("console"), Now: c.Now}); err != nil {
			return nil, nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, nil, err
	}
	// Ready only once every informer of every cache the reconciler reads
	// has synced.
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		return r.Synced(ctx)
	}); err != nil {
		return nil, nil, err
	}
	return mgr, r, nil
}

// Validate checks the settings that need no cluster.
func (c Config) Validate() error {
	if c.consoleOn() && c.ConsoleCertDir == "" {
		return fmt.Errorf("the console plugin server (%s) serves TLS only: give the folder of its serving certificate (tls.crt, tls.key)", c.ConsoleBindAddress)
	}
	if c.debugOn() && !c.DebugAllowRemote {
		return debug.CheckLoopback(c.DebugBindAddress)
	}
	return nil
}

func (c Config) debugOn() bool { return c.DebugBindAddress != "" && c.DebugBindAddress != "0" }

func (c Config) consoleOn() bool { return c.ConsoleBindAddress != "" && c.ConsoleBindAddress != "0" }

func orDisabled(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

func (c Config) leaseNamespace() string {
	if c.LeaderElectionNamespace != "" {
		return c.LeaderElectionNamespace
	}
	return c.Namespace
}

// initialTLS reads the cluster's TLS profile before the metrics endpoint
// serves: a replica waiting for the lease serves it too.
func initialTLS(c client.Reader, err error) tlsprofile.Profile {
	if err != nil {
		ctrl.Log.Error(err, "cannot read the cluster's TLS profile; serving Intermediate until the reconciler reads it", "action", "keep")
		return tlsprofile.Intermediate()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := tlsprofile.Initial(ctx, c)
	if err != nil {
		ctrl.Log.Error(err, "the cluster's TLS profile at start", "profile", p.String(), "action", "keep")
	}
	return p
}
