package cluster

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
)

func execute(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Execute(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"help", "run"}} {
		code, out, errOut := execute(args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "--zap-log-level") || !strings.Contains(out, "--kubeconfig") {
			t.Errorf("%v: exit %d, stderr %q; want run's help with its flags:\n%s", args, code, errOut, out)
		}
	}
	if code, _, errOut := execute("run", "extra"); code != cli.ExitError || !strings.Contains(errOut, "--help") {
		t.Errorf("run extra: exit %d %q", code, errOut)
	}
}

// run and render name the missing kubeconfig instead of a stack trace.
func TestWithoutCluster(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	for args, want := range map[string]string{
		"":                        "no cluster to talk to",
		"--kubeconfig=" + missing: missing,
	} {
		a := []string{"run"}
		if args != "" {
			a = append(a, args)
		}
		code, _, errOut := execute(a...)
		if code != cli.ExitError || !strings.Contains(errOut, want) || strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "KUBERNETES_MASTER") {
			t.Errorf("%v: exit %d, stderr %q; want %q", a, code, errOut, want)
		}
	}
	if code, _, errOut := execute("render", "-o", "status"); code != cli.ExitError || !strings.Contains(errOut, "give --hco-file") {
		t.Errorf("render without input: exit %d %q", code, errOut)
	}
	t.Setenv("KUBECONFIG", missing)
	if code, _, errOut := execute("run"); code != cli.ExitError || !strings.Contains(errOut, "KUBECONFIG="+missing) {
		t.Errorf("KUBECONFIG naming a missing file: exit %d %q", code, errOut)
	}
}
