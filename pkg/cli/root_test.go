package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func execute(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Execute(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Help at every level goes to stdout, lists the subcommands, exits 0.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"-h"}, {"help"}, {"run", "--help"}, {"render", "-h"}, {"help", "render"}, {"version", "--help"}, {"completion", "--help"}} {
		code, out, errOut := execute(args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want help on stdout, exit 0", args, code, out, errOut)
		}
	}
	_, out, _ := execute("--help")
	for _, sub := range []string{"run ", "render ", "version ", "completion "} {
		if !strings.Contains(out, sub) {
			t.Errorf("root help does not list %q:\n%s", sub, out)
		}
	}
	_, out, _ = execute("run", "--help")
	if !strings.Contains(out, "--zap-log-level") || !strings.Contains(out, "--kubeconfig") {
		t.Errorf("run help lacks its flags:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := execute(args...)
		if code != 0 || !strings.HasPrefix(out, Name+" ") || !strings.Contains(out, "commit ") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

func TestCompletion(t *testing.T) {
	code, out, _ := execute("completion", "bash")
	if code != 0 || !strings.Contains(out, "__start_"+strings.ReplaceAll(Name, "-", "_")) && !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d\n%.200s", code, out)
	}
	code, out, _ = execute("__complete", "render", "--asset", "swap")
	if code != 0 || !strings.Contains(out, "swap-enable") {
		t.Errorf("asset names complete: exit %d %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"nope"}, {"render", "--no-such-flag"}, {"run", "extra"}} {
		code, out, errOut := execute(args...)
		if code != ExitError || out != "" || !strings.Contains(errOut, "error:") || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// run names the missing kubeconfig instead of a stack trace.
func TestRunWithoutCluster(t *testing.T) {
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
		if code != ExitError || !strings.Contains(errOut, want) || strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "KUBERNETES_MASTER") {
			t.Errorf("%v: exit %d, stderr %q; want %q", a, code, errOut, want)
		}
	}
	t.Setenv("KUBECONFIG", missing)
	if code, _, errOut := execute("run"); code != ExitError || !strings.Contains(errOut, "KUBECONFIG="+missing) {
		t.Errorf("KUBECONFIG naming a missing file: exit %d %q", code, errOut)
	}
}
