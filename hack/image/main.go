// Command image builds the autopilot's OCI image without a container
// engine: both static binaries on an empty base, a non-root user, the
// cluster binary as entrypoint, OCI labels, written as an OCI image layout
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
	out := flag.String("out", "", "OCI image layout to write (replaced)")
	ref := flag.String("ref", "virt-platform-autopilot:latest", "the image's reference name in the layout")
	version := flag.String("version", "devel", "the version label")
	commit := flag.String("commit", "unknown", "the revision label")
	flag.Parse()
	if err := build(*bin, *out, *ref, *version, *commit); err != nil {
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

func build(bin, out, ref, version, commit string) error {
	if bin == "" || out == "" {
		return fmt.Errorf("-bin and -out are required")
	}
	fs, err := files(bin)
	if err != nil {
		return err
	}
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
