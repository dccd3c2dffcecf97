// Command kube-apiserver is a thin wrapper that builds the upstream API server
// from Go modules, so integration tests need no downloaded binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
