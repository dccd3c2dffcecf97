// Package deploy checks the install manifests without a container engine:
// config/default and config/local, rendered by hack/deploy.sh as 'make
// deploy' and 'make deploy-local' do, are accepted by a real kube-apiserver
// (server-side dry-run) and agree with each other and with the binary's flags.
package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
	"github.com/kubevirt/virt-platform-autopilot/pkg/consoleapi"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const namespace = "virt-platform-autopilot-system"

func render(t *testing.T, overlay, image string) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.Command("hack/deploy.sh", "render", overlay, image)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/deploy.sh render %s: %v\n%s", overlay, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("%s rendered nothing:\n%s", overlay, out)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestManifests(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is needed to render kustomize (make deploy uses it): install it (apt-get install kubectl)")
	}
	vendor := os.Getenv("VENDOR_CRDS")
	var crds []*apiextensionsv1.CustomResourceDefinition
	if vendor != "" {
		sm, err := testenv.ReadCRD(filepath.Join(vendor, "prometheus", "monitoring.coreos.com_servicemonitors.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, sm)
		cp, err := testenv.ReadCRD(filepath.Join(vendor, "console", "90_consoleplugins.crd.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, cp)
	} else if os.Getenv("CI") != "" {
		t.Fatal("VENDOR_CRDS is unset under CI: the ServiceMonitor needs the vendor's CRD")
	} else {
		testenv.NotRun(t.Name()+" (the ServiceMonitor)", "needs the vendors' CRDs (VENDOR_CRDS)")
	}
	env, _, c, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	// As 'kubectl apply' does with a List, the namespace exists before what is in it.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}

	const image = "registry.example.com/team/virt-platform-autopilot:v9.9.9"
	for overlay, img := range map[string]string{"config/default": image, "config/local": "localhost/virt-platform-autopilot:dev"} {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay, img)
			for _, o := range objs {
				if (o.GetKind() == "ServiceMonitor" || o.GetKind() == "ConsolePlugin") && vendor == "" {
					t.Logf("VENDOR_CRDS unset: %s not checked against its CRD", o.GetKind())
					continue
				}
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("deploy-test"), client.DryRunAll, client.ForceOwnership); err != nil {
					t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
			checkConsistent(t, objs, img)
		})
	}
	def := render(t, "config/default", image)
	for _, want := range [][2]string{{"ServiceMonitor", "virt-platform-autopilot"}, {"RoleBinding", "prometheus-k8s"}, {"ClusterRoleBinding", "virt-platform-autopilot-metrics-reader"}} {
		if find(def, want[0], want[1]) == nil {
			t.Errorf("config/default lacks %s %s (Prometheus scraping)", want[0], want[1])
		}
	}
	ns := find(def, "Namespace", namespace)
	if ns == nil || ns.GetLabels()["openshift.io/cluster-monitoring"] != "true" {
		t.Errorf("the namespace must carry openshift.io/cluster-monitoring=true for the platform Prometheus: %v", ns)
	}
	svc, sm := find(def, "Service", "virt-platform-autopilot-metrics"), find(def, "ServiceMonitor", "virt-platform-autopilot")
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints: %v", eps)
	}
	got, _, _ := unstructured.NestedString(eps[0].(map[string]any), "tlsConfig", "serverName")
	if want := svc.GetName() + "." + svc.GetNamespace() + ".svc"; got != want {
		t.Errorf("ServiceMonitor verifies %q, the service CA certifies %q", got, want)
	}
	if svc.GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"] == "" {
		t.Errorf("the metrics Service asks for no serving certificate")
	}
	checkConsolePlugin(t, def)
}

// checkConsolePlugin: the ConsolePlugin names the Service the Deployment
// serves the plugin behind, on the port the server listens on, with the
// certificate the service CA writes for that Service, and proxies the
// plugin's API with the user's token under the alias the plugin calls.
func checkConsolePlugin(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	cp := find(objs, "ConsolePlugin", consoleapi.PluginName)
	if cp == nil {
		t.Fatalf("config/default has no ConsolePlugin %s", consoleapi.PluginName)
	}
	if cp.GetNamespace() != "" {
		t.Errorf("the ConsolePlugin is cluster-scoped: namespace %q", cp.GetNamespace())
	}
	backend, _, _ := unstructured.NestedMap(cp.Object, "spec", "backend", "service")
	svc := find(objs, "Service", fmt.Sprint(backend["name"]))
	if svc == nil || svc.GetNamespace() != backend["namespace"] {
		t.Fatalf("the ConsolePlugin's backend %v is no Service of config/default", backend)
	}
	proxies, _, _ := unstructured.NestedSlice(cp.Object, "spec", "proxy")
	if len(proxies) != 1 {
		t.Fatalf("proxies %v", proxies)
	}
	px := proxies[0].(map[string]any)
	pxSvc, _, _ := unstructured.NestedMap(px, "endpoint", "service")
	if px["alias"] != consoleapi.ProxyAlias || px["authorization"] != "UserToken" || pxSvc["name"] != backend["name"] || pxSvc["namespace"] != backend["namespace"] || fmt.Sprint(pxSvc["port"]) != fmt.Sprint(backend["port"]) {
		t.Errorf("proxy %v: want alias %s with the user's token, to the backend Service", px, consoleapi.ProxyAlias)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	var target any
	for _, p := range ports {
		if fmt.Sprint(p.(map[string]any)["port"]) == fmt.Sprint(backend["port"]) {
			target = p.(map[string]any)["targetPort"]
		}
	}
	dep := find(objs, "Deployment", "virt-platform-autopilot")
	ctr, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := ctr[0].(map[string]any)
	containerPort := ""
	for _, p := range c["ports"].([]any) {
		if p.(map[string]any)["name"] == target {
			containerPort = fmt.Sprint(p.(map[string]any)["containerPort"])
		}
	}
	args := fmt.Sprint(c["args"])
	if containerPort == "" || !strings.Contains(args, "--console-bind-address=:"+containerPort+" ") {
		t.Errorf("the Service targets port %v (container port %s); the server listens as %s", target, containerPort, args)
	}
	secret := svc.GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"]
	mounted := false
	vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
		if name != "" && name == secret {
			for _, m := range c["volumeMounts"].([]any) {
				mm := m.(map[string]any)
				if mm["name"] == v.(map[string]any)["name"] && strings.Contains(args, "--console-cert-dir="+fmt.Sprint(mm["mountPath"])) {
					mounted = true
				}
			}
		}
	}
	if secret == "" || !mounted {
		t.Errorf("the console server's --console-cert-dir is not the service CA's certificate for %s (Secret %q)", svc.GetName(), secret)
	}
	if !strings.Contains(args, "--console-plugin-dir=/console-plugin") {
		t.Errorf("the Deployment does not serve the plugin the image holds (/console-plugin): %s", args)
	}
}

// checkConsistent: the image asked for, the service account the bindings
// name, and flags the binary accepts.
func checkConsistent(t *testing.T, objs []*unstructured.Unstructured, image string) {
	t.Helper()
	dep := find(objs, "Deployment", "virt-platform-autopilot")
	if dep == nil || dep.GetNamespace() != namespace {
		t.Fatalf("no Deployment virt-platform-autopilot in %s", namespace)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	ctr := containers[0].(map[string]any)
	if ctr["image"] != image {
		t.Errorf("image %v, want %s", ctr["image"], image)
	}
	var args []string
	for _, a := range ctr["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("args %v: want the run command", args)
	}
	run, _, err := cluster.NewRootCommand().Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.ParseFlags(args[1:]); err != nil {
		t.Errorf("the Deployment's args are not the binary's flags: %v", err)
	}
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			m := s.(map[string]any)
			if m["name"] == sa && m["namespace"] != namespace {
				t.Errorf("%s %s binds %s in %v, the pod runs in %s", o.GetKind(), o.GetName(), sa, m["namespace"], namespace)
			}
		}
	}
	if strings.Contains(strings.Join(args, " "), "--namespace="+namespace) {
		t.Errorf("--namespace is the HCO's namespace (openshift-cnv), not the autopilot's: %v", args)
	}
}
