// Command image builds the autopilot's OCI image without a container
// engine: both static binaries on an empty base, a non-root user, the
// cluster binary as entrypoint, OCI labels, written as an OCI image layout
// ('make image'). 'make docker-build' stays for machines with podman or
// docker (Dockerfile: the same binaries on distroless static).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// layer is one tar: /tmp (sticky, world-writable, as distroless) and the
// binaries, owned by root and executable, with a fixed time so the same
// binaries make the same layer.
func layer(bin string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"usr/", 0o755}, {"usr/local/", 0o755}, {"usr/local/bin/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, b := range binaries {
		raw, err := os.ReadFile(filepath.Join(bin, b))
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/" + b, Mode: 0o755, Size: int64(len(raw)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(raw); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

func build(bin, out, ref, version, commit string) error {
	if bin == "" || out == "" {
		return fmt.Errorf("-bin and -out are required")
	}
	l, err := layer(bin)
	if err != nil {
		return err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.User = nonroot
	cfg.Config.Entrypoint = []string{"/usr/local/bin/virt-platform-autopilot-cluster"}
	cfg.Config.Cmd = []string{"run"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
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
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	// What was built, and the next step: this program pushes nothing.
	fmt.Printf("wrote image %s (%s) as an OCI layout in %s\npush it with: skopeo copy oci:%s docker://%s   (or: crane push %s %s)\n",
		ref, digest, out, out, ref, out, ref)
	return nil
}
