// Package image builds the autopilot's OCI image as 'make image' does and
// opens it with nothing but the OCI image layout specification (index,
// manifest, config, layers; every blob checked against its digest): its
// configuration, its files, and its binaries run.
package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the image is linux/amd64; this runs on %s/%s", runtime.GOOS, runtime.GOARCH)
		}
		t.Skipf("the image's binaries run on linux/amd64 only")
	}
	out := t.TempDir()
	const ref = "quay.io/example/virt-platform-autopilot:v9.9.9-test"
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_OUT="+out, "VERSION=v9.9.9-test", "IMG="+ref)
	cmd.Dir = testenv.RepoRoot()
	built, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, built)
	}
	img := testenv.ReadOCILayout(t, out)
	if !strings.Contains(string(built), "wrote image "+ref) || !strings.Contains(string(built), "docker://"+ref) {
		t.Errorf("make image names neither what it built nor how to push it:\n%s", built)
	}
	if img.Ref != ref {
		t.Errorf("reference %q", img.Ref)
	}
	if img.ManifestMediaType != "application/vnd.oci.image.manifest.v1+json" || img.ConfigMediaType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("media types: %s, %s", img.ManifestMediaType, img.ConfigMediaType)
	}
	var config struct {
		OS, Architecture string
		Config           struct {
			User            string
			Entrypoint, Cmd []string
			Labels          map[string]string
		}
	}
	if err := json.Unmarshal(img.Config, &config); err != nil {
		t.Fatal(err)
	}
	if config.OS != "linux" || config.Architecture != "amd64" {
		t.Errorf("platform %s/%s", config.OS, config.Architecture)
	}
	if config.Config.User != "65532:65532" {
		t.Errorf("user %q: the image runs as the non-root user (the restricted SCC, runAsNonRoot)", config.Config.User)
	}
	if strings.Join(config.Config.Entrypoint, " ") != "/usr/local/bin/virt-platform-autopilot-cluster" || strings.Join(config.Config.Cmd, " ") != "run" {
		t.Errorf("entrypoint %v cmd %v", config.Config.Entrypoint, config.Config.Cmd)
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": "v9.9.9-test", "org.opencontainers.image.source": "https://github.com/kubevirt/virt-platform-autopilot"} {
		if config.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, config.Config.Labels[k], want)
		}
	}

	// The files, as a container runtime unpacks them.
	fs := t.TempDir()
	modes := map[string]os.FileMode{}
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
			modes[strings.TrimSuffix(h.Name, "/")] = h.FileInfo().Mode()
			p := filepath.Join(fs, h.Name)
			switch h.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(f, tr); err != nil { //nolint:gosec // our own image, sizes from our own build
					t.Fatal(err)
				}
				_ = f.Close()
			}
		}
	}
	if m := modes["tmp"]; m&os.ModeSticky == 0 || m.Perm() != 0o777 {
		t.Errorf("/tmp mode %v", m)
	}
	for _, b := range []string{"virt-platform-autopilot", "virt-platform-autopilot-cluster"} {
		if m := modes["usr/local/bin/"+b]; m.Perm()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", b, m)
		}
		outp, err := exec.Command(filepath.Join(fs, "usr", "local", "bin", b), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(outp), "v9.9.9-test") {
			t.Errorf("%s version: %v\n%s", b, err, outp)
		}
	}

	// The console plugin the Deployment serves (--console-plugin-dir
	// /console-plugin), exactly as built: the manifest and every script
	// it loads, read-only.
	var manifest struct {
		Name        string   `json:"name"`
		LoadScripts []string `json:"loadScripts"`
	}
	raw, err := os.ReadFile(filepath.Join(fs, "console-plugin", "plugin-manifest.json"))
	if err != nil {
		t.Fatalf("the image has no console plugin: %v", err)
	}
	if err := json.Unmarshal(raw, &manifest); err != nil || manifest.Name != "virt-platform-autopilot" || len(manifest.LoadScripts) == 0 {
		t.Errorf("plugin-manifest.json: %v %+v", err, manifest)
	}
	dist := filepath.Join(testenv.RepoRoot(), "console-plugin", "dist")
	for _, s := range append(manifest.LoadScripts, "plugin-manifest.json") {
		in, err1 := os.ReadFile(filepath.Join(fs, "console-plugin", s))
		want, err2 := os.ReadFile(filepath.Join(dist, s))
		if err1 != nil || err2 != nil || !bytes.Equal(in, want) {
			t.Errorf("console-plugin/%s: not the build's (%v, %v)", s, err1, err2)
		}
		if m := modes["console-plugin/"+s]; m.Perm() != 0o644 {
			t.Errorf("console-plugin/%s mode %v, want read-only 0644", s, m)
		}
	}
}
