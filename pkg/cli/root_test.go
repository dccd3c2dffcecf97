package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the offline command line; a command it would hand to the
// cluster binary is recorded in handed, not run.
func execute(args ...string) (code int, stdout, stderr string) {
	code, stdout, stderr, _ = executeHanding(args...)
	return code, stdout, stderr
}

func executeHanding(args ...string) (code int, stdout, stderr string, handed []string) {
	var out, errOut bytes.Buffer
	cl := Cluster{Delegate: func(a []string) error { handed = a; return nil }}
	code = Execute(args, &out, &errOut, cl)
	return code, out.String(), errOut.String(), handed
}

// Help at every level goes to stdout, lists the subcommands, exits 0.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{{}, {"--help"}, {"-h"}, {"help"}, {"render", "-h"}, {"help", "render"}, {"version", "--help"}, {"completion", "--help"}} {
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
}

// The offline binary hands run (in any form) and render against a cluster
// to the cluster binary, whole; everything offline stays here.
func TestClusterCommandsAreHanded(t *testing.T) {
	hco := filepath.Join("..", "..", "config", "samples", "hco.yaml")
	for _, args := range [][]string{
		{"run"}, {"run", "--help"}, {"help", "run"}, {"run", "--leader-elect", "--zap-log-level=debug"},
		{"__complete", "run", "--zap"}, {"render", "--kubeconfig", "kc", "-o", "diff"}, {"render", "-o", "status"},
	} {
		code, _, errOut, handed := executeHanding(args...)
		if code != ExitOK || strings.Join(handed, " ") != strings.Join(args, " ") {
			t.Errorf("%v: exit %d, handed %v, stderr %q; want the whole command line handed", args, code, handed, errOut)
		}
	}
	for _, args := range [][]string{{"render", "--hco-file", hco, "-o", "status"}, {"version"}, {"--help"}, {"render", "--help"}, {"__complete", "render", "--asset", "swap"}} {
		if _, _, _, handed := executeHanding(args...); handed != nil {
			t.Errorf("%v: handed to the cluster binary, want it answered offline", args)
		}
	}
	// Without a cluster binary to hand to, the error says so.
	var out, errOut bytes.Buffer
	if code := Execute([]string{"run"}, &out, &errOut, Cluster{}); code != ExitError || !strings.Contains(errOut.String(), "no cluster commands") {
		t.Errorf("run without cluster commands: exit %d %q", code, errOut.String())
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
	for _, args := range [][]string{{"nope"}, {"render", "--no-such-flag"}} {
		code, out, errOut := execute(args...)
		if code != ExitError || out != "" || !strings.Contains(errOut, "error:") || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// Without the cluster binary beside this one, handing a command over fails
// with what to do, and nothing is run.
func TestExecClusterNeedsItsBinaryBeside(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if isFile(filepath.Join(filepath.Dir(self), ClusterName)) {
		t.Fatalf("%s lies beside the test binary: this test would exec it", ClusterName)
	}
	err = ExecCluster([]string{"run", "--help"})
	if err == nil || !strings.Contains(err.Error(), ClusterName+" is not installed beside") || !strings.Contains(err.Error(), "--hco-file") {
		t.Fatalf("got %v", err)
	}
}

// Flags are validated before a client is built or the cluster binary takes
// over: a wrong output or asset fails here, at once, with exit 2.
func TestRenderValidatesBeforeReachingACluster(t *testing.T) {
	for _, args := range [][]string{
		{"render", "-o", "yml"},
		{"render", "--kubeconfig", "kc", "-o", "tabel"},
		{"render", "--asset", "no-such-asset"},
		{"render", "--crds", "x"},
		{"render", "--autopilot-deployment", "no-namespace"},
		{"render", "--hco-file", "h.yaml", "--autopilot-deployment", "a/b"},
	} {
		var out, errOut bytes.Buffer
		reached := false
		cl := Cluster{
			Delegate: func([]string) error { reached = true; return nil },
			Source:   func(string, string, string) (Source, error) { reached = true; return nil, nil },
		}
		if code := Execute(args, &out, &errOut, cl); code != ExitError || reached {
			t.Errorf("%v: exit %d, reached the cluster %v, stderr %q; want exit 2 before any cluster", args, code, reached, errOut.String())
		}
		cl.Source = nil // the offline binary hands over instead
		reached = false
		if code := Execute(args, &out, &errOut, cl); code != ExitError || reached {
			t.Errorf("%v (offline binary): exit %d, handed %v; want exit 2 before handing over", args, code, reached)
		}
	}
}
