package cluster

import (
	goflag "flag"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

func newRunCommand() *cobra.Command {
	var (
		kubeconfig string
		cfg        = app.Config{Namespace: "openshift-cnv"}
		zapOpts    = zap.Options{}
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller manager",
		Long: `Run the controller: reconcile the HyperConverged CR and every asset of the
catalog until stopped (SIGINT/SIGTERM). One structured log line per action
(create, correct, delete, throttle, invalid, retain, wait); nothing for a
reconcile that changes nothing. --zap-log-level=debug adds the reasoning.`,
		Example: `  ` + cli.Name + ` run --kubeconfig ~/.kube/config --namespace openshift-cnv
  ` + cli.Name + ` run --leader-elect --metrics-secure          # as deployed in a pod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Version, _ = cli.Version()
			if cfg.LeaderElectionNamespace == "" {
				cfg.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
			}
			if err := cfg.Validate(); err != nil {
				return cli.Exit(cli.ExitError, err)
			}
			rc, err := restConfig(kubeconfig)
			if err != nil {
				return cli.Exit(cli.ExitError, err)
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(cmd.ErrOrStderr())))
			mgr, _, err := app.NewManager(rc, cfg)
			if err != nil {
				return cli.Exit(1, err)
			}
			if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
				return cli.Exit(1, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, then in-cluster, then ~/.kube/config)")
	f.StringVar(&cfg.Namespace, "namespace", cfg.Namespace, "namespace of the HyperConverged object")
	f.StringVar(&cfg.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
	f.BoolVar(&cfg.MetricsSecure, "metrics-secure", false, "serve metrics over HTTPS, authenticating and authorizing every scrape (set when deployed)")
	f.StringVar(&cfg.MetricsCertDir, "metrics-cert-dir", "", "folder holding tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)")
	f.StringVar(&cfg.ConsoleBindAddress, "console-bind-address", "0", "address of the console plugin server: its files and its read-only API, over TLS, each API request authorized as the console's user (0 disables)")
	f.StringVar(&cfg.ConsoleCertDir, "console-cert-dir", "", "folder holding tls.crt and tls.key for --console-bind-address (the service CA's serving certificate)")
	f.StringVar(&cfg.ConsolePluginDir, "console-plugin-dir", "", "folder of the built console plugin the server serves (the image's /console-plugin); empty: the API alone")
	f.StringVar(&cfg.DebugBindAddress, "debug-bind-address", "127.0.0.1:8081", "address of the debug endpoints, loopback only (0 disables)")
	f.BoolVar(&cfg.DebugAllowRemote, "debug-allow-remote", false, "allow a non-loopback debug address (the endpoints are unauthenticated)")
	f.StringVar(&cfg.ProbeBindAddress, "health-probe-bind-address", ":8082", "address of /healthz and /readyz")
	f.BoolVar(&cfg.LeaderElection, "leader-elect", false, "elect a leader so only one replica reconciles")
	f.StringVar(&cfg.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader lease (default: $POD_NAMESPACE, else --namespace)")
	f.DurationVar(&cfg.Lease.Duration, "leader-elect-lease-duration", 0, "how long a standby waits for a lease its leader stopped renewing (default: OpenShift's convention by control plane topology, 137s; 270s on a single node)")
	f.DurationVar(&cfg.Lease.RenewDeadline, "leader-elect-renew-deadline", 0, "how long the leader retries renewing before it stops leading and exits (default: 107s; 240s on a single node)")
	f.DurationVar(&cfg.Lease.RetryPeriod, "leader-elect-retry-period", 0, "how often the leader renews and a standby tries to acquire (default: 26s; 60s on a single node)")
	f.DurationVar(&cfg.SettlePeriod, "settle-period", settle.DefaultPeriod, "how long a changed hardware or topology fact must hold before a write it asks for that reboots a pool or changes remediation (negative: no wait)")
	f.DurationVar(&cfg.Resync, "resync", 10*time.Minute, "re-evaluate every asset this often without events (costs no API request when nothing drifted)")
	// Logging: --zap-log-level (debug, info, error or a number), --zap-encoder (json, console), ...
	gofs := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gofs)
	f.AddGoFlagSet(gofs)
	return cmd
}
