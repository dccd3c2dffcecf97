// Package alerts unit-tests the autopilot's alert rules with promtool,
// against the PrometheusRule exactly as the autopilot renders it.
package alerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found: .ci/run installs it (Debian package prometheus)")
		}
		testenv.NotRun(t.Name(), "promtool not found")
		t.Skip("promtool not found: install Debian's prometheus package to test the alert rules")
	}
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range cat.Assets {
		a := &cat.Assets[i]
		if a.Component != "PrometheusRule" {
			continue
		}
		n++
		t.Run(a.Name, func(t *testing.T) { testRules(t, promtool, a) })
	}
	if n == 0 {
		t.Fatal("no PrometheusRule asset in the catalog")
	}
}

// testRules checks an asset's rules and runs its unit tests,
// testdata/<asset>_test.yaml (required: every alert is tested).
func testRules(t *testing.T, promtool string, a *catalog.Asset) {
	u, err := render.New(assets.FS).Render(a.Path, &rendercontext.RenderContext{Namespace: "openshift-cnv"}, a.Params, nil)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", a.Name+"_test.yaml"))
	if err != nil {
		t.Fatalf("every alert has promtool unit tests: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
		t.Logf("promtool %v:\n%s", args, out)
	}
}
