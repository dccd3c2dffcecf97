// Command virt-platform-autopilot keeps the OpenShift Virtualization
// platform substrate converged. Subcommands: run (default), render.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
)

func main() {
	args := os.Args[1:]
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = run(args)
	case "render":
		os.Exit(cli.Render(args, os.Stdout, os.Stderr))
	case "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", cmd)
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `Usage: virt-platform-autopilot [command] [flags]

Commands:
  run     run the controller manager (default)
  render  show what the autopilot would apply, offline (--hco-file) or
          against a cluster (--kubeconfig), as yaml, json, status or diff
  help    show this help

Run 'virt-platform-autopilot run -h' for the flags of a command.
`)
}
