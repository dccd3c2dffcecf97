package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// buildTo builds a main package of the repository into dir.
func buildTo(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// demoSetup builds the autopilot and the demo program and returns a state
// folder for the demos.
func demoSetup(t *testing.T) (autopilot, demo, state string) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run 'make test'")
	}
	bins := t.TempDir()
	buildTo(t, bins, "./cmd/virt-platform-autopilot-cluster") // runs the controller
	return buildTo(t, bins, "./cmd/virt-platform-autopilot"), buildTo(t, bins, "./hack/demo"), t.TempDir()
}

// make demo, detached, twice at once: each converges on its own control
// plane, every kubectl command it prints works, and demo-stop removes both.
func TestDemo(t *testing.T) {
	autopilot, demo, state := demoSetup(t)

	start := func() string {
		cmd := exec.Command(demo, "start", "--state-dir", state, "--autopilot", autopilot)
		cmd.Dir = testenv.RepoRoot()
		cmd.Env = append(os.Environ(), "DEMO_DETACH=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo start: %v\n%s", err, out)
		}
		return string(out)
	}
	first, second := start(), start()
	t.Cleanup(func() { _ = exec.Command(demo, "stop", "--state-dir", state).Run() })

	kubeconfig := regexp.MustCompile(`kubeconfig:\s+(\S+)`)
	k1, k2 := kubeconfig.FindStringSubmatch(first), kubeconfig.FindStringSubmatch(second)
	if k1 == nil || k2 == nil || k1[1] == k2[1] {
		t.Fatalf("each demo prints its own kubeconfig:\n%s\n%s", first, second)
	}
	for _, want := range []string{"The autopilot converged", "psi-enable", "INCLUDED", "make demo-stop", "platform.kubevirt.io/patch", "platform.kubevirt.io/ignore-fields",
		"platform.kubevirt.io/mode=unmanaged", "platform.kubevirt.io/disabled-resources", "platform.kubevirt.io/enable-pci-passthrough",
		"platform.kubevirt.io/disruption-window=", "platform.kubevirt.io/autopilot=false", "platform.kubevirt.io/autopilot=report-only",
		"--field-manager=argocd-controller", "/debug/"} {
		if !strings.Contains(first, want) {
			t.Errorf("the demo's summary lacks %q:\n%s", want, first)
		}
	}

	// Every command the demo prints runs as printed.
	if _, err := exec.LookPath("kubectl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kubectl is not installed: .ci/run installs it")
		}
		t.Log("kubectl not installed: the printed commands are not run")
		testenv.NotRun(t.Name()+" (the printed kubectl commands)", "kubectl not installed")
	} else {
		sc := bufio.NewScanner(strings.NewReader(first))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "kubectl ") && !strings.HasPrefix(line, "curl ") && !strings.HasPrefix(line, "bin/") {
				continue
			}
			line = strings.Replace(line, "bin/virt-platform-autopilot", autopilot, 1)
			cmd := exec.Command("bash", "-c", line)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+k1[1])
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("printed command failed: %s\n%v\n%s", line, err, out)
			}
		}
	}

	pids := map[string]int{}
	for _, out := range []string{first, second} {
		m := regexp.MustCompile(`running in the background \(pid (\d+)\)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no pid in:\n%s", out)
		}
		pids[m[1]], _ = strconv.Atoi(m[1])
	}
	out, err := exec.Command(demo, "stop", "--state-dir", state).CombinedOutput()
	if err != nil || strings.Count(string(out), "stopped demo") != 2 {
		t.Fatalf("demo stop: %v\n%s", err, out)
	}
	left, _ := os.ReadDir(state)
	if len(left) != 0 {
		t.Errorf("demo stop left %d folders in %s", len(left), state)
	}
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("demo process %d still runs after stop", pid)
		}
	}
}

// running reports whether pid is a live process; an unreaped zombie (its
// parent, 'demo start', has exited) is not.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// make demo in the foreground: it prints the summary, follows the log, and
// Ctrl-C stops everything and removes its folder.
func TestDemoForeground(t *testing.T) {
	autopilot, demo, state := demoSetup(t)

	cmd := exec.Command(demo, "start", "--state-dir", state, "--autopilot", autopilot)
	cmd.Dir = testenv.RepoRoot()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var seen strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Ctrl-C stops the demo") {
			break
		}
	}
	if !strings.Contains(seen.String(), "kubeconfig:") {
		t.Fatalf("no summary before the log:\n%s\nstderr:\n%s", seen.String(), stderr.String())
	}
	go func() {
		for sc.Scan() { // keep draining the followed log
		}
	}()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after Ctrl-C: %v", err)
	}
	if left, _ := os.ReadDir(state); len(left) != 0 {
		t.Errorf("Ctrl-C left %d folders in %s", len(left), state)
	}
}
