package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
)

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var (
		kubeconfig  = fs.String("kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then in-cluster)")
		namespace   = fs.String("namespace", "openshift-cnv", "namespace of the HyperConverged object")
		metricsAddr = fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
		debugAddr   = fs.String("debug-bind-address", "127.0.0.1:8081", "address of the debug endpoints, loopback only (0 disables)")
		debugRemote = fs.Bool("debug-allow-remote", false, "allow a non-loopback debug address (the endpoints are unauthenticated)")
		metricsSec  = fs.Bool("metrics-secure", false, "serve metrics over HTTPS, authenticating and authorizing every scrape (set when deployed)")
		probeAddr   = fs.String("health-probe-bind-address", ":8082", "address of /healthz and /readyz")
		leaderElect = fs.Bool("leader-elect", false, "elect a leader so only one replica reconciles")
		resync      = fs.Duration("resync", 10*time.Minute, "re-evaluate every asset this often without events (costs no API request when nothing drifted)")
	)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	cfgApp := app.Config{
		Namespace:          *namespace,
		MetricsBindAddress: *metricsAddr,
		ProbeBindAddress:   *probeAddr,
		DebugBindAddress:   *debugAddr,
		DebugAllowRemote:   *debugRemote,
		MetricsSecure:      *metricsSec,
		LeaderElection:     *leaderElect,
		Resync:             *resync,
	}
	if err := cfgApp.Validate(); err != nil {
		return err
	}
	if *kubeconfig != "" {
		if err := os.Setenv(clientcmd.RecommendedConfigPathEnvVar, *kubeconfig); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	mgr, _, err := app.NewManager(cfg, cfgApp)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
