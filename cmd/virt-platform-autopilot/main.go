// Command virt-platform-autopilot keeps the OpenShift Virtualization
// platform substrate converged. 'virt-platform-autopilot --help' lists the
// commands: run, render, version, completion. This binary renders offline
// without an API client; run and render against a cluster are handed to
// virt-platform-autopilot-cluster, installed beside it.
package main

import (
	"os"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr, cli.Cluster{Delegate: cli.ExecCluster}))
}
