package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// readyTimeout bounds every wait of the demo: API server up, autopilot
// ready, cluster converged.
const readyTimeout = 2 * time.Minute

// convergeTimeout bounds the wait for a diff that finds nothing to change.
const convergeTimeout = time.Minute

// demo is one running demo: a control plane and the autopilot on it.
type demo struct {
	dir, logPath, kubeconfig string
	env                      *envtest.Environment
	autopilot                *exec.Cmd
	exited                   chan struct{}
	// The autopilot's endpoints.
	metrics, probes, debug string
	summary                string
}

// up starts everything; on error, down cleans up what was started.
func up(dir, autopilot string, progress io.Writer) (*demo, error) {
	d := &demo{dir: dir, logPath: filepath.Join(dir, "autopilot.log"), kubeconfig: filepath.Join(dir, "kubeconfig"), exited: make(chan struct{})}
	root, err := os.Getwd()
	if err != nil {
		return d, err
	}
	crds, from, err := testenv.ClusterCRDs(os.Getenv("VENDOR_CRDS"))
	if err != nil {
		return d, err
	}
	fmt.Fprintf(progress, "starting kube-apiserver and etcd on loopback, with %d CRDs from %s...\n", len(crds), from)
	env, cfg, c, err := testenv.Start(crds)
	if err != nil {
		return d, fmt.Errorf("start the control plane: %w", err)
	}
	d.env = env
	if err := testenv.WriteKubeconfig(cfg, d.kubeconfig); err != nil {
		return d, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := seed(ctx, c, root); err != nil {
		return d, fmt.Errorf("create the sample HyperConverged and Nodes: %w", err)
	}

	// A free port is only free until someone takes it (another control
	// plane starting on this machine): an autopilot that could not bind
	// one is started again on others.
	for attempt := 1; ; attempt++ {
		err := d.startAutopilot(ctx, autopilot, progress)
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(tail(d.logPath, 20), "address already in use") {
			return d, err
		}
		d.exited = make(chan struct{})
	}
	// Converged: a diff of everything against the cluster finds nothing to
	// change. An asset that cannot converge here is shown, not fatal.
	convCtx, convCancel := context.WithTimeout(ctx, convergeTimeout)
	defer convCancel()
	err = waitFor(convCtx, d.exited, func() bool { return d.cli(nil, "render", "--kubeconfig", d.kubeconfig, "--output", "diff") == nil })
	select {
	case <-d.exited:
		return d, fmt.Errorf("the autopilot exited: see %s", d.logPath)
	default:
	}
	var status bytes.Buffer
	_ = d.cli(&status, "render", "--kubeconfig", d.kubeconfig, "--output", "json", "--show-excluded")
	d.summary = summary(d, statusSummary(status.Bytes()), err == nil, d.metrics, d.probes, d.debug)
	return d, nil
}

// down stops the autopilot, then the control plane, and removes the folder.
func (d *demo) down() {
	if d.autopilot != nil && d.autopilot.Process != nil {
		_ = d.autopilot.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
			_ = d.autopilot.Process.Kill()
			<-d.exited
		}
	}
	if d.env != nil {
		certDir := d.env.ControlPlane.GetAPIServer().CertDir
		_ = d.env.Stop()
		_ = os.RemoveAll(certDir)
	}
	_ = os.RemoveAll(d.dir)
}

// cli runs the autopilot binary's CLI.
func (d *demo) cli(out io.Writer, args ...string) error {
	cmd := exec.Command(d.autopilot.Path, args...)
	cmd.Stdout, cmd.Stderr = out, nil
	return cmd.Run()
}

// follow copies the autopilot's log to w as it grows, until done.
func (d *demo) follow(w io.Writer, done <-chan struct{}) {
	f, err := os.Open(d.logPath)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return
		}
		select {
		case <-done:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// seed creates openshift-cnv, the namespaces the assets' operators would
// have created, the sample HyperConverged and the sample Nodes.
func seed(ctx context.Context, c client.Client, root string) error {
	namespaces, err := testenv.AssetNamespaces("openshift-cnv")
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}); err != nil {
			return err
		}
	}
	if err := seedDeployment(ctx, c); err != nil {
		return err
	}
	for _, f := range []string{"hco.yaml", "nodes.yaml"} {
		objs, err := readObjects(filepath.Join(root, "config", "samples", f))
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// seedDeployment creates the autopilot's Deployment object where an
// install puts it. The demo runs the autopilot as a local process and this
// control plane runs no pods, so none starts; it is what render reads a
// cluster's operand images from (gather.Images), so render --kubeconfig
// --output facts works here as on an installed cluster. The local process
// has no RELATED_IMAGE_* environment, and neither has this container.
func seedDeployment(ctx context.Context, c client.Client) error {
	ns, name, _ := strings.Cut(cli.DefaultDeployment, "/")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/name": "virt-platform-autopilot"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: gather.ManagerContainer,
					Image: "localhost/virt-platform-autopilot:demo", Args: []string{"run"}}}},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		return fmt.Errorf("create Deployment %s: %w", cli.DefaultDeployment, err)
	}
	return nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		u := &unstructured.Unstructured{}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := yaml.Unmarshal(js, &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

func waitFor(ctx context.Context, exited <-chan struct{}, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("the autopilot exited")
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

func httpOK(url string) bool {
	resp, err := http.Get(url) //nolint:gosec,noctx // loopback probe of our own child
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// startAutopilot starts the autopilot on free loopback ports and waits
// until it is ready.
func (d *demo) startAutopilot(ctx context.Context, autopilot string, progress io.Writer) error {
	d.metrics, d.probes, d.debug = freeAddr(), freeAddr(), freeAddr()
	logf, err := os.Create(d.logPath)
	if err != nil {
		return err
	}
	d.autopilot = exec.Command(autopilot, "run", "--kubeconfig", d.kubeconfig,
		"--metrics-bind-address", d.metrics, "--health-probe-bind-address", d.probes, "--debug-bind-address", d.debug)
	d.autopilot.Stdout, d.autopilot.Stderr = logf, logf
	fmt.Fprintln(progress, "starting the autopilot...")
	if err := d.autopilot.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", autopilot, err)
	}
	exited := d.exited
	go func() { _ = d.autopilot.Wait(); _ = logf.Close(); close(exited) }()
	if err := waitFor(ctx, d.exited, func() bool { return httpOK("http://" + d.probes + "/readyz") }); err != nil {
		return fmt.Errorf("the autopilot did not become ready (%w): see %s, which ends:\n%s", err, d.logPath, tail(d.logPath, 20))
	}
	return nil
}

// tail is the last n lines of the file at path (what it could read).
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
