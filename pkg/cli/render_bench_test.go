package cli

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// BenchmarkRenderOffline is 'render --hco-file' of the whole catalog, in
// process (the binary adds package initialisation: see docs/performance.md).
func BenchmarkRenderOffline(b *testing.B) {
	root := testenv.RepoRoot()
	args := []string{"render", "--hco-file", filepath.Join(root, "config", "samples", "hco.yaml"),
		"--nodes-file", filepath.Join(root, "config", "samples", "nodes.yaml"), "--output", "yaml"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if code := Execute(args, io.Discard, io.Discard, Cluster{}); code != ExitOK {
			b.Fatalf("exit %d", code)
		}
	}
}
