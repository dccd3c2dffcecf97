package testenv

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OCIImage is the one image of an OCI image layout, read with nothing but
// the image layout specification (oci-layout, index.json, blobs/sha256):
// every blob is checked against its descriptor's digest and size.
type OCIImage struct {
	// Ref is the index's org.opencontainers.image.ref.name.
	Ref                                string
	ManifestMediaType, ConfigMediaType string
	// Config is the config blob (JSON).
	Config []byte
	// Layers are the layers as uncompressed tar streams, in order.
	Layers [][]byte
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

// ReadOCILayout reads the layout in dir, which must hold one image.
func ReadOCILayout(t testing.TB, dir string) OCIImage {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "oci-layout")); err != nil || !strings.Contains(string(b), `"imageLayoutVersion"`) {
		t.Fatalf("%s: not an OCI image layout: %v %s", dir, err, b)
	}
	blob := func(d ociDescriptor) []byte {
		t.Helper()
		alg, hexsum, ok := strings.Cut(d.Digest, ":")
		if !ok || alg != "sha256" {
			t.Fatalf("digest %q", d.Digest)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "blobs", alg, hexsum))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != hexsum || int64(len(raw)) != d.Size {
			t.Fatalf("blob %s does not match its descriptor (%d bytes, want %d)", d.Digest, len(raw), d.Size)
		}
		return raw
	}
	var index struct{ Manifests []ociDescriptor }
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil || json.Unmarshal(raw, &index) != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s/index.json: %v %s", dir, err, raw)
	}
	var manifest struct {
		MediaType string
		Config    ociDescriptor
		Layers    []ociDescriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0]), &manifest); err != nil {
		t.Fatal(err)
	}
	img := OCIImage{Ref: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"],
		ManifestMediaType: manifest.MediaType, ConfigMediaType: manifest.Config.MediaType, Config: blob(manifest.Config)}
	for _, l := range manifest.Layers {
		data := blob(l)
		if strings.HasSuffix(l.MediaType, "+gzip") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("layer %s: %v", l.Digest, err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatalf("layer %s: %v", l.Digest, err)
			}
		}
		img.Layers = append(img.Layers, data)
	}
	return img
}
