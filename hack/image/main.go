// Command image builds the autopilot's OCI image without a container
// engine: both static binaries and the built console plugin (served by
// the controller from /console-plugin) on an empty base, a non-root user,
// the cluster binary as entrypoint, OCI labels, written as an OCI image layout
// ('make image'). 'make docker-build' stays for machines with podman or
// docker (Dockerfile: the same binaries on distroless static).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/kubevirt/virt-platform-autopilot/hack/image/oci"
)

// The binaries, under /usr/local/bin as in the Dockerfile.
var binaries = []string{"virt-platform-autopilot", "virt-platform-autopilot-cluster"}

// nonroot is distroless's nonroot user, as the Dockerfile runs.
const nonroot = "65532:65532"

func main() {
	bin := flag.String("bin", "", "folder holding the static linux/amd64 binaries")
	plugin := flag.String("plugin", "", "folder holding the built console plugin (console-plugin/dist)")
	out := flag.String("out", "", "OCI image layout to write (replaced)")
	ref := flag.String("ref", "virt-platform-autopilot:latest", "the image's reference name in the layout")
	version := flag.String("version", "devel", "the version label")
	commit := flag.String("commit", "unknown", "the revision label")
	flag.Parse()
	if err := build(*bin, *plugin, *out, *ref, *version, *commit); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// files are the image's: /tmp (sticky, world-writable, as distroless)
// and the binaries, owned by root and executable.
func files(bin string) ([]oci.File, error) {
	out := []oci.File{{Name: "tmp", Mode: 0o1777, Dir: true}, {Name: "usr", Mode: 0o755, Dir: true},
		{Name: "usr/local", Mode: 0o755, Dir: true}, {Name: "usr/local/bin", Mode: 0o755, Dir: true}}
	for _, b := range binaries {
		raw, err := os.ReadFile(filepath.Join(bin, b))
		if err != nil {
			return nil, err
		}
		out = append(out, oci.File{Name: "usr/local/bin/" + b, Mode: 0o755, Data: raw})
	}
	return out, nil
}

// PluginDir is where the image holds the console plugin (the
// Deployment's --console-plugin-dir).
const PluginDir = "console-plugin"

// pluginFiles are the built plugin's files under PluginDir, read-only
// (root-owned, 0644; folders 0755), in a stable order.
func pluginFiles(dir string) ([]oci.File, error) {
	out := []oci.File{{Name: PluginDir, Mode: 0o755, Dir: true}}
	if _, err := os.Stat(filepath.Join(dir, "plugin-manifest.json")); err != nil {
		return nil, fmt.Errorf("the console plugin is not built in %s (make console-plugin): %w", dir, err)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := PluginDir + "/" + filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, oci.File{Name: name, Mode: 0o755, Dir: true})
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, oci.File{Name: name, Mode: 0o644, Data: raw})
		return nil
	})
	return out, err
}

func build(bin, plugin, out, ref, version, commit string) error {
	if bin == "" || plugin == "" || out == "" {
		return fmt.Errorf("-bin, -plugin and -out are required")
	}
	fs, err := files(bin)
	if err != nil {
		return err
	}
	pfs, err := pluginFiles(plugin)
	if err != nil {
		return err
	}
	fs = append(fs, pfs...)
	img, err := oci.Image(fs, func(c *v1.Config) {
		c.User = nonroot
		c.Entrypoint = []string{"/usr/local/bin/virt-platform-autopilot-cluster"}
		c.Cmd = []string{"run"}
		c.WorkingDir = "/"
		c.Labels = map[string]string{
			"org.opencontainers.image.title":       "virt-platform-autopilot",
			"org.opencontainers.image.description": "Turns OpenShift Virtualization into a managed platform",
			"org.opencontainers.image.source":      "https://github.com/kubevirt/virt-platform-autopilot",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    commit,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			// OpenShift's image labels (the console and support tooling read them).
			"name":                "virt-platform-autopilot",
			"summary":             "Turns OpenShift Virtualization into a managed platform",
			"io.k8s.display-name": "Virt Platform Autopilot",
			"io.openshift.tags":   "virtualization,kubevirt",
			"io.k8s.description":  "Annotations on the HyperConverged resource drive it; writes that reboot nodes go at once unless the HyperConverged sets a disruption window.",
		}
	})
	if err != nil {
		return err
	}
	return oci.Write(os.Stdout, out, img, ref)
}
