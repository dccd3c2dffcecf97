package nodecheck

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/test/notrun"
)

// needTool returns the path of a program the node's own software judges
// with. Missing, the test is listed as not run (make test prints the list)
// and skipped; under CI=true, where .ci/run installs every one, it fails.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	missing(t, name+" is not installed ("+install+")")
	return ""
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: .ci/run must provide it", why)
	}
	notrun.Record(t.Name(), why)
	t.Skip(why)
}

// repoRoot is the repository's top folder.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// kubeletCheck returns the kubelet-check binary (hack/kubelet-check): from
// $KUBELET_CHECK (make test builds it), else bin/tools. Either way it must
// carry the stamp of the current sources, so a stale binary never judges.
func kubeletCheck(t *testing.T) string {
	t.Helper()
	root := repoRoot()
	p := os.Getenv("KUBELET_CHECK")
	if p == "" {
		p = filepath.Join(root, "bin", "tools", "kubelet-check")
	}
	want, err := sourceStamp(filepath.Join(root, "hack", "kubelet-check"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p + ".built-from")
	switch {
	case err != nil:
		missing(t, "kubelet-check is not built (make kubelet-check)")
	case strings.TrimSpace(string(got)) != want:
		missing(t, "kubelet-check was built from other sources (make kubelet-check)")
	}
	return p
}

// sourceStamp is hack/kubelet-check.sh's stamp: sha256 of go.mod, go.sum
// and the .go files in byte order, first 16 hex digits.
func sourceStamp(dir string) (string, error) {
	gos, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	sort.Strings(gos)
	h := sha256.New()
	for _, f := range append([]string{filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum")}, gos...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
