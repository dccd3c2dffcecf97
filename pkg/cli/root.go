// Package cli is the command line: run (the controller), render (what the
// controller would do), version and shell completion. Every command writes
// its output to stdout and its errors to stderr; tests run it in-process
// through Execute.
//
// This package holds what needs no cluster; the commands that talk to one
// come from package cli/cluster (see Cluster), so the offline binary links
// no API client.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Name is the binary's name in help and version output.
const Name = "virt-platform-autopilot"

// Exit codes. render follows kubectl diff (1: something would change).
const (
	ExitOK      = 0
	ExitChanges = 1 // render --output diff: applying would change something
	ExitError   = 2 // bad flags, unreadable input, a failed request
	ExitInvalid = 3 // render: an asset's annotation is invalid (output still written)
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Execute runs the command line args (without the program name) with the
// cluster commands cl and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer, cl Cluster) int {
	var err error
	if cl.Run == nil && needsCluster(args) {
		err = delegate(cl, args)
	} else {
		root := NewRootCommand(cl, args)
		root.SetArgs(args)
		root.SetOut(stdout)
		root.SetErr(stderr)
		err = root.Execute()
	}
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !errors.Is(ee.err, errQuiet) {
			fmt.Fprintln(stderr, "error:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong arguments.
	fmt.Fprintf(stderr, "error: %v\nRun '%s --help' for usage.\n", err, Name)
	return ExitError
}

// errQuiet is an exit code whose reason was already written.
var errQuiet = errors.New("quiet")

// NewRootCommand builds the command tree; args is the command line, for
// the commands the offline binary hands to the cluster binary.
func NewRootCommand(cl Cluster, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   Name,
		Short: "Keeps the OpenShift Virtualization platform substrate converged",
		Long: Name + ` keeps the platform substrate that OpenShift Virtualization needs at
production scale (kernel and kubelet settings, descheduling, remediation,
operator settings) converged to opinionated defaults, driven by the
HyperConverged CR and customized with annotations.`,
		Example: `  # run the controller against the current kubeconfig
  ` + Name + ` run --kubeconfig ~/.kube/config

  # what would it do with this HCO? (offline, no cluster)
  ` + Name + ` render --hco-file config/samples/hco.yaml --nodes-file config/samples/nodes.yaml --output status`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// No Run: the root alone prints its help.
	}
	root.SetVersionTemplate("{{.Version}}\n")
	run := delegatedRun(cl, args)
	if cl.Run != nil {
		run = cl.Run()
	}
	root.AddCommand(run, newRenderCommand(cl, args), newFnCommand(), newVersionCommand())
	return root
}
