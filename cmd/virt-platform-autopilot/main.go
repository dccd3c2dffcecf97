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

// oneShotHeap is the heap this process may reach before it collects
// garbage at all. Every command here runs once and exits: an offline render
// of the whole catalog allocates about 12 MiB, and collecting it cost a
// tenth of the render's time. Past this size the collector runs as usual.
const oneShotHeap = 64 << 20

func main() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneShotHeap)
	}
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr, cli.Cluster{Delegate: cli.ExecCluster}))
}
