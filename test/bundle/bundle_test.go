// Package bundle checks the OLM bundle (bundle/, written by cmd/bundle-gen)
// with the operator framework's own validators, and applies what OLM
// would create from it to a real API server by server-side dry-run.
package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const namespace = "virt-platform-autopilot-system"

func load(t *testing.T) *manifests.Bundle {
	t.Helper()
	b, err := manifests.GetBundleFromDir(filepath.Join(testenv.RepoRoot(), "bundle"))
	if err != nil {
		t.Fatalf("bundle/ does not load as a registry+v1 bundle: %v", err)
	}
	return b
}

// The operator framework's validators: the bundle's structure, the CSV,
// the objects beside it, OperatorHub's fields, good practices and the
// install modes (AllNamespaces only).
func TestBundleValidates(t *testing.T) {
	b := load(t)
	validators := append(validation.DefaultBundleValidators, validation.OperatorHubV2Validator, validation.GoodPracticesValidator, validation.OperatorGroupValidator)
	for _, res := range validators.Validate(b, b.CSV) {
		for _, e := range res.Errors {
			t.Errorf("%s: %v", res.Name, e)
		}
		for _, w := range res.Warnings {
			if w.Level == errors.LevelWarn {
				t.Logf("warning %s: %v", res.Name, w)
			}
		}
	}
	csv := b.CSV
	for _, m := range csv.Spec.InstallModes {
		if m.Supported != (m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces) {
			t.Errorf("install mode %s supported=%v: the autopilot installs cluster-wide only", m.Type, m.Supported)
		}
	}
	// The console offers to enable each plugin the CSV names: each is a
	// ConsolePlugin of the bundle.
	var plugins []string
	if err := json.Unmarshal([]byte(csv.Annotations["console.openshift.io/plugins"]), &plugins); err != nil || len(plugins) == 0 {
		t.Errorf("console.openshift.io/plugins %q: want a JSON list of the bundle's ConsolePlugins (%v)", csv.Annotations["console.openshift.io/plugins"], err)
	}
	for _, p := range plugins {
		found := false
		for _, o := range b.Objects {
			found = found || (o.GetKind() == "ConsolePlugin" && o.GetName() == p)
		}
		if !found {
			t.Errorf("the CSV offers console plugin %q, the bundle holds no such ConsolePlugin", p)
		}
	}
	if len(csv.Spec.CustomResourceDefinitions.Owned) > 0 || len(csv.Spec.WebhookDefinitions) > 0 || len(csv.Spec.NativeAPIs) > 0 {
		t.Error("no CRDs, webhooks or dependencies: OLM v1 installs bundles without them")
	}
}

// What OLM creates from the CSV (the Deployment, a ClusterRole and Roles
// of its permissions bound to the ServiceAccount) and every other object
// of the bundle are accepted by a real API server.
func TestBundleInstallsOnAnAPIServer(t *testing.T) {
	b := load(t)
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
		// OLM's own kinds: the CSV, and the install objects docs/deployment.md shows.
		olm, err := filepath.Glob(filepath.Join(vendor, "olm", "*.yaml"))
		if err != nil || len(olm) == 0 {
			t.Fatalf("OLM CRDs in %s/olm: %v", vendor, err)
		}
		for _, f := range olm {
			crd, err := testenv.ReadCRD(f)
			if err != nil {
				t.Fatal(err)
			}
			crds = append(crds, crd)
		}
	} else if os.Getenv("CI") != "" {
		t.Fatal("VENDOR_CRDS is unset under CI: the ServiceMonitor and OLM's kinds need the vendors' CRDs")
	} else {
		testenv.NotRun(t.Name()+" (the ServiceMonitor, the CSV and the documented OLM objects)", "needs the vendors' CRDs (VENDOR_CRDS)")
	}
	env, _, c, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	apply := func(obj client.Object) {
		t.Helper()
		u := &unstructured.Unstructured{}
		raw, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if k := obj.GetObjectKind().GroupVersionKind().Kind; u.GetNamespace() == "" && k != "ClusterRole" && k != "ClusterRoleBinding" && k != "ConsolePlugin" {
			u.SetNamespace(namespace)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("olm"), client.DryRunAll, client.ForceOwnership); err != nil {
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
	}
	strategy := b.CSV.Spec.InstallStrategy.StrategySpec
	if len(strategy.DeploymentSpecs) != 1 {
		t.Fatalf("deployments: %d", len(strategy.DeploymentSpecs))
	}
	d := strategy.DeploymentSpecs[0]
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: d.Label}, Spec: d.Spec}
	apply(dep)
	if sa := dep.Spec.Template.Spec.ServiceAccountName; sa == "" {
		t.Error("the Deployment names no ServiceAccount for the permissions")
	}
	for i, p := range strategy.ClusterPermissions {
		apply(&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "olm-cluster-" + string(rune('a'+i))}, Rules: p.Rules})
		if p.ServiceAccountName != dep.Spec.Template.Spec.ServiceAccountName {
			t.Errorf("cluster permissions for %s, the Deployment runs as %s", p.ServiceAccountName, dep.Spec.Template.Spec.ServiceAccountName)
		}
	}
	for i, p := range strategy.Permissions {
		apply(&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "olm-" + string(rune('a'+i))}, Rules: p.Rules})
	}
	for _, o := range b.Objects {
		if (o.GetKind() == "ServiceMonitor" || o.GetKind() == "ClusterServiceVersion" || o.GetKind() == "ConsolePlugin") && vendor == "" {
			continue
		}
		apply(o)
	}
	if vendor == "" {
		return
	}
	// The installs docs/deployment.md shows (the namespace, CatalogSource,
	// OperatorGroup, Subscription; ClusterCatalog, ClusterExtension and its
	// installer) are accepted by OLM's CRDs, applied as an admin would.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-marketplace"}}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(raw, -1) {
		for _, doc := range bytes.Split(m[1], []byte("\n---\n")) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("docs/deployment.md: %v", err)
			}
			kinds[u.GetKind()] = true
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl"), client.DryRunAll); err != nil {
				t.Errorf("docs/deployment.md %s %s rejected: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	for _, k := range []string{"Namespace", "CatalogSource", "OperatorGroup", "Subscription", "ClusterCatalog", "ClusterExtension"} {
		if !kinds[k] {
			t.Errorf("docs/deployment.md shows no %s", k)
		}
	}
}
