// Package catalog builds the OLM bundle and catalog images as 'make
// catalog' does and reads them with nothing but the OCI image layout
// specification and the file-based catalog's documented schemas; a
// bundle OLM could not resolve is refused by operator-registry's own
// validation (inside hack/catalog) before anything is written.
package catalog

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// open reads an OCI layout's one image: its reference, its config's
// labels and the files of its layers.
func open(t *testing.T, dir string) (ref string, labels map[string]string, files map[string]string) {
	t.Helper()
	img := testenv.ReadOCILayout(t, dir)
	var config struct {
		Config struct{ Labels map[string]string }
	}
	if err := json.Unmarshal(img.Config, &config); err != nil {
		t.Fatal(err)
	}
	files = map[string]string{}
	for _, l := range img.Layers {
		tr := tar.NewReader(bytes.NewReader(l))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg {
				b, _ := io.ReadAll(tr)
				files[h.Name] = string(b)
			}
		}
	}
	return img.Ref, config.Config.Labels, files
}

func makeCatalog(t *testing.T, bundle, out string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "catalog", "CATALOG_OUT="+out,
		"BUNDLE_IMG=quay.io/example/vpa-bundle:v9", "CATALOG_IMG=quay.io/example/vpa-catalog:v9")
	cmd.Dir = testenv.RepoRoot()
	if bundle != "" {
		// The same program on another bundle folder.
		cmd = exec.Command("go", "run", ".", "-bundle", bundle, "-out", out,
			"-bundle-image", "quay.io/example/vpa-bundle:v9", "-catalog-image", "quay.io/example/vpa-catalog:v9")
		cmd.Dir = filepath.Join(testenv.RepoRoot(), "hack", "catalog")
	}
	return cmd.CombinedOutput()
}

func TestCatalogImages(t *testing.T) {
	out := t.TempDir()
	if b, err := makeCatalog(t, "", out); err != nil {
		t.Fatalf("make catalog: %v\n%s", err, b)
	}
	// The bundle image: the bundle's folders at the root, its metadata
	// annotations as labels (registry+v1).
	ref, labels, files := open(t, filepath.Join(out, "bundle-image"))
	if ref != "quay.io/example/vpa-bundle:v9" || labels["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" ||
		labels["operators.operatorframework.io.bundle.manifests.v1"] != "manifests/" {
		t.Errorf("bundle image %s labels %v", ref, labels)
	}
	csv, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "bundle", "manifests", "virt-platform-autopilot.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if files["manifests/virt-platform-autopilot.clusterserviceversion.yaml"] != string(csv) || files["metadata/annotations.yaml"] == "" {
		t.Errorf("the bundle image does not hold bundle/ as it is: %d files", len(files))
	}
	// The catalog image: the FBC under the directory its label names; the
	// bundle by digest, in the package's default channel.
	_, labels, files = open(t, filepath.Join(out, "catalog-image"))
	dir := strings.TrimPrefix(labels["operators.operatorframework.io.index.configs.v1"], "/")
	fbc, ok := files[dir+"/virt-platform-autopilot/catalog.yaml"]
	if dir == "" || !ok {
		t.Fatalf("catalog image: label %v, files %v", labels, keys(files))
	}
	var pkg, channel, bundle map[string]any
	for _, doc := range strings.Split(fbc, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		switch m["schema"] {
		case "olm.package":
			pkg = m
		case "olm.channel":
			channel = m
		case "olm.bundle":
			bundle = m
		}
	}
	if pkg["name"] != "virt-platform-autopilot" || pkg["defaultChannel"] != channel["name"] || channel["package"] != "virt-platform-autopilot" {
		t.Errorf("package %v channel %v", pkg, channel)
	}
	img, _ := bundle["image"].(string)
	if !strings.HasPrefix(img, "quay.io/example/vpa-bundle@sha256:") {
		t.Errorf("the catalog names the bundle %q, not by digest", img)
	}
	entries, _ := channel["entries"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["name"] != bundle["name"] {
		t.Errorf("channel entries %v, bundle %v", entries, bundle["name"])
	}
}

// A bundle OLM could not resolve (here: a CSV without a name, so no
// channel entry can name it) is refused by operator-registry's model, and
// nothing is written.
func TestCatalogRefusesABundleNotValid(t *testing.T) {
	bundle := t.TempDir()
	src := filepath.Join(testenv.RepoRoot(), "bundle")
	if err := os.CopyFS(bundle, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bundle, "manifests", "virt-platform-autopilot.clusterserviceversion.yaml")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(raw), "\n  name: virt-platform-autopilot.v0.1.0\n", "\n  name: \"\"\n", 1)
	if broken == string(raw) {
		t.Fatal("the CSV's name was not found to break")
	}
	if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	b, err := makeCatalog(t, bundle, out)
	if err == nil || !strings.Contains(string(b), "not valid") {
		t.Fatalf("a broken bundle was catalogued: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "catalog-image")); err == nil {
		t.Error("a catalog image was written for a bundle that is not valid")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
