// Command virt-platform-autopilot keeps the OpenShift Virtualization
// platform substrate converged. 'virt-platform-autopilot --help' lists the
// commands: run, render, version, completion. This binary renders offline
// without an API client; run and render against a cluster are handed to
// virt-platform-autopilot-cluster, installed beside it.
package main

import (
	"os"
	"runtime/debug"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
)

// oneShotGOGC lets the heap grow to five times what is live before the
// collector runs, and the first collection waits for 16 MiB. Every command
// here runs once and exits: an offline render of the whole catalog
// allocates about 4 MiB, and collecting it cost a tenth of the render's
// time; a large input (a folder of CRDs) is still collected in proportion.
const oneShotGOGC = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(oneShotGOGC)
	}
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr, cli.Cluster{Delegate: cli.ExecCluster}))
}
