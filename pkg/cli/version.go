package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time: -ldflags "-X .../pkg/cli.version=v1.2.3 -X .../pkg/cli.commit=abc123".
var (
	version = ""
	commit  = ""
)

// Version returns the version and git commit of this build, from ldflags
// when the Makefile set them, else from the Go build info.
func Version() (ver, rev string) {
	ver, rev = version, commit
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			ver = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if ver == "" {
		ver = "devel"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev
}

func versionString() string {
	ver, rev := Version()
	return fmt.Sprintf("%s %s (commit %s, %s)", Name, ver, rev, runtime.Version())
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and git commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}
