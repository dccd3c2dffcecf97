// Command kubectl builds the upstream kubectl from Go modules, for machines
// without one (CI): the deploy test renders the kustomize overlays with it and
// the demo test runs the commands the demo prints. Its own module keeps the
// project's go.mod free of kubectl's dependencies.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
