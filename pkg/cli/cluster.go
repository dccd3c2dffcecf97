package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ClusterName is the binary holding the commands that talk to a cluster.
// The API client and the controller machinery cost some 15 ms of package
// initialisation in every process that links them, so the binary admins
// run for offline work does not: it hands run and render against a cluster
// to this one, installed beside it.
const ClusterName = Name + "-cluster"

// Cluster is what the commands that talk to a cluster need. The cluster
// binary fills Run and Source (package cli/cluster); the offline binary
// sets only Delegate.
type Cluster struct {
	// Run builds the run command (the controller).
	Run func() *cobra.Command
	// Source reads a cluster for render: the HCO in namespace, and the
	// operand images from the autopilot's Deployment ("namespace/name").
	Source func(kubeconfig, namespace, deployment string) (Source, error)
	// Delegate runs args (the whole command line) in the cluster binary;
	// it returns only on failure.
	Delegate func(args []string) error
}

// Source is where render reads the HCO and the cluster facts.
type Source interface {
	Read(ctx context.Context, cat *catalog.Catalog) (Input, error)
	// Diff writes what applying ds would change (render --output diff),
	// tombstoned objects too when deletions is set; Exit(ExitChanges, nil)
	// when something would change.
	Diff(ctx context.Context, rc *rendercontext.RenderContext, ds []engine.Decision, deletions bool, stdout io.Writer) error
}

// Input is what a Source read.
type Input struct {
	Facts rendercontext.Facts
	Live  engine.LiveReader
	// Notes say where a fact came from, or why it is unknown (stderr).
	Notes []string
	// Unknown name facts the source could not read that the controller
	// reads for itself (the operand images of its own pod): a render
	// goes on without them, a facts file is not written.
	Unknown []string
	// Unverified: the input is a facts file no key verified. Its author
	// may describe the cluster but not author what is applied: a render
	// that would copy a live object's content into its output is refused.
	Unverified bool
}

// Exit is an error that ends the process with code; a nil err exits
// quietly (the reason was already written).
func Exit(code int, err error) error {
	if err == nil {
		err = errQuiet
	}
	return &exitError{code, err}
}

// needsCluster reports whether args name the run command, also as
// 'help run' or in a completion request: the cluster binary answers those
// whole, flags and help included.
func needsCluster(args []string) bool {
	for _, a := range args {
		switch {
		case a == "help" || a == cobra.ShellCompRequestCmd || a == cobra.ShellCompNoDescRequestCmd:
		case len(a) > 0 && a[0] == '-':
		default:
			return a == "run"
		}
	}
	return false
}

// delegatedRun stands in for run in the offline binary's help.
func delegatedRun(cl Cluster, args []string) *cobra.Command {
	return &cobra.Command{
		Use:                "run",
		Short:              "Run the controller manager",
		DisableFlagParsing: true,
		RunE:               func(*cobra.Command, []string) error { return delegate(cl, args) },
	}
}

func delegate(cl Cluster, args []string) error {
	if cl.Delegate == nil {
		return Exit(ExitError, fmt.Errorf("this build has no cluster commands"))
	}
	return cl.Delegate(args)
}

// ExecCluster runs args in the cluster binary installed beside this one
// (never one found elsewhere, which could be another version), in place of
// this process: same PID, signals and exit code.
func ExecCluster(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return Exit(ExitError, fmt.Errorf("find this binary: %w", err))
	}
	path := filepath.Join(filepath.Dir(self), ClusterName)
	if !isFile(path) {
		return Exit(ExitError, fmt.Errorf("%s is not installed beside %s (%s): it runs the controller and renders against a cluster; 'make build' builds both and the image ships both (render --hco-file works without it)", ClusterName, Name, filepath.Dir(self)))
	}
	if err := execve(path, append([]string{ClusterName}, args...)); err != nil {
		return Exit(ExitError, fmt.Errorf("start %s: %w", path, err))
	}
	return nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
