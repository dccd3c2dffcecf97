// Package e2e runs the shipped binary, as a process, against a real API
// server: flags, servers and signal handling as an admin would meet them.
package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

func freeAddr(t *testing.T) string {
	a, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func get(url string) (int, string) {
	resp, err := http.Get(url) //nolint:gosec // test URL on loopback
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestBinary(t *testing.T) {
	// Both binaries, as make build lays them out: the first hands run and
	// render against a cluster to the second.
	bins := t.TempDir()
	bin := buildTo(t, bins, "./cmd/virt-platform-autopilot")
	buildTo(t, bins, "./cmd/virt-platform-autopilot-cluster")

	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range []string{"hyperconverged.yaml", "machineconfig.yaml"} {
		crd, err := testenv.ReadCRD(filepath.Join(testenv.RepoRoot(), "test", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	env, cfg, c, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-cnv"}}); err != nil {
		t.Fatal(err)
	}
	hco := &unstructured.Unstructured{}
	hco.SetGroupVersionKind(rendercontext.HCOGVK)
	hco.SetNamespace("openshift-cnv")
	hco.SetName(rendercontext.HCOName)
	if err := c.Create(ctx, hco); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}

	// A non-loopback debug address is refused before anything starts.
	out, err := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--debug-bind-address", "0.0.0.0:18081").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a loopback address") {
		t.Fatalf("a public debug address must be refused: %v\n%s", err, out)
	}

	probes, dbg := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0",
		"--health-probe-bind-address", probes, "--debug-bind-address", dbg)
	logs, err := os.Create(filepath.Join(t.TempDir(), "autopilot.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	dump := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }

	poll(t, "/readyz", func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK })
	poll(t, "the golden HCO config", func() bool {
		u := hco.DeepCopy()
		if c.Get(ctx, client.ObjectKeyFromObject(u), u) != nil {
			return false
		}
		v, _, _ := unstructured.NestedInt64(u.Object, "spec", "virtualization", "liveMigrationConfig", "parallelOutboundMigrationsPerNode")
		return v == 2
	})
	poll(t, "the PSI MachineConfig", func() bool {
		mc := &unstructured.Unstructured{}
		mc.SetAPIVersion("machineconfiguration.openshift.io/v1")
		mc.SetKind("MachineConfig")
		return c.Get(ctx, client.ObjectKey{Name: "99-worker-kubevirt-psi-karg"}, mc) == nil
	})
	// The controller's last outcome shows once the reconcile that wrote the
	// object has recorded it (a write that reboots a pool is recorded after
	// the walk, with its VM impact).
	var code int
	var body string
	poll(t, "/debug/render/psi-enable with the last outcome", func() bool {
		code, body = get("http://" + dbg + "/debug/render/psi-enable")
		return code == http.StatusOK && strings.Contains(body, "outcome:")
	})
	if !strings.Contains(body, "psi=1") {
		t.Fatalf("/debug/render/psi-enable: %d\n%s", code, body)
	}
	// The admin's log: one info line per object created, none per no-op.
	if l := dump(); !strings.Contains(l, `"action":"create"`) || !strings.Contains(l, `"object":"MachineConfig.machineconfiguration.openshift.io/99-worker-kubevirt-psi-karg"`) {
		t.Fatalf("no create line for the PSI MachineConfig in the log:\n%s", l)
	}
	// The reasoning (assets left as they are, watches) is debug verbosity
	// only: not in the default log.
	if l := dump(); strings.Contains(l, `"asset evaluated"`) || strings.Contains(l, `"watching a kind"`) {
		t.Fatalf("debug-level lines in the default log:\n%s", l)
	}
	// The autopilot's Deployment, where render against a cluster reads the
	// operand images the controller's pod has (this process has none).
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "virt-platform-autopilot-system"}}); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "virt-platform-autopilot-system", Name: "virt-platform-autopilot"}}
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "autopilot"}}
	dep.Spec.Template.Labels = map[string]string{"app": "autopilot"}
	dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: "autopilot"}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	runReadmeCommands(t, bin, kubeconfig)

	code, body = get("http://" + dbg + "/debug/health?format=json")
	if code != http.StatusOK || !strings.Contains(body, `"status": "ok"`) {
		t.Fatalf("/debug/health: %d\n%s", code, body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, dump())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30s after SIGTERM\n%s", dump())
	}
}

// runReadmeCommands runs every 'bin/virt-platform-autopilot ...' line of the
// README's code blocks as printed (a live one against the test cluster): the
// README stays true.
func runReadmeCommands(t *testing.T, bin, kubeconfig string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	inBlock := false
	tmp, written := t.TempDir(), map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		const prefix = "bin/virt-platform-autopilot "
		if !inBlock || !strings.HasPrefix(line, prefix) {
			continue
		}
		cmdline := strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
		cmdline = strings.Replace(cmdline, "~/.kube/config", kubeconfig, 1)
		args := strings.Fields(strings.TrimPrefix(cmdline, prefix))
		// "> FILE" writes stdout to a file in a temporary folder, which
		// later commands read by the same name.
		var to *os.File
		for i := 0; i < len(args); i++ {
			if p, ok := written[args[i]]; ok {
				args[i] = p
			}
			if args[i] == ">" && i+1 < len(args) {
				p := filepath.Join(tmp, filepath.Base(args[i+1]))
				written[args[i+1]] = p
				if to, err = os.Create(p); err != nil {
					t.Fatal(err)
				}
				args = args[:i]
			}
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = testenv.RepoRoot()
		var out []byte
		if to != nil {
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = to, &stderr
			err = cmd.Run()
			_ = to.Close()
			out = stderr.Bytes()
		} else {
			out, err = cmd.CombinedOutput()
		}
		code := cmd.ProcessState.ExitCode()
		// A live diff exits 1 when something would change: the README says so.
		if err != nil && (code != 1 || !strings.Contains(cmdline, "--output diff")) {
			t.Errorf("README command %q: exit %d: %v\n%s", cmdline, code, err, out)
		}
		ran++
	}
	if ran < 4 {
		t.Errorf("found only %d binary commands in the README's code blocks", ran)
	}
}
