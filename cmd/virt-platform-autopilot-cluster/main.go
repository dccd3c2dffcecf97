// Command virt-platform-autopilot-cluster runs the commands that talk to a
// cluster (run, render --kubeconfig) and every other command too;
// virt-platform-autopilot hands those commands to it, so only this binary
// links the API client.
package main

import (
	"os"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
)

func main() {
	os.Exit(cluster.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
