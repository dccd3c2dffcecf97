// Package oci builds single-layer linux/amd64 OCI images from files and
// writes them as OCI image layouts, with go-containerregistry: what 'make
// image' and 'make catalog' share, so every image this project builds
// without a container engine is built one way (fixed file times: the same
// files make the same digest).
package oci

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of the layer: a directory (Data nil and Dir) or a
// regular file, owned by root.
type File struct {
	Name string // relative to /, without a leading slash
	Mode int64
	Dir  bool
	Data []byte
}

// Image is one layer holding files, on an empty base, for linux/amd64;
// config (may be nil) sets the rest of the image's configuration.
func Image(files []File, config func(*v1.Config)) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch}
		if f.Dir {
			h.Typeflag, h.Name, h.Size = tar.TypeDir, f.Name+"/", 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, l); err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	if config != nil {
		config(&cfg.Config)
	}
	return mutate.ConfigFile(img, cfg)
}

// Write replaces dir with an OCI image layout holding img under the
// reference ref, and says on w what it wrote and how to push it (nothing
// here pushes).
func Write(w io.Writer, dir string, img v1.Image, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
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
	_, err = fmt.Fprintf(w, "wrote image %s (%s) as an OCI layout in %s\npush it with: skopeo copy oci:%s docker://%s   (or: crane push %s %s)\n",
		ref, digest, dir, dir, ref, dir, ref)
	return err
}
