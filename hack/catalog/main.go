// Command catalog builds, without a container engine, the OLM bundle image
// from bundle/ and a file-based catalog (FBC) holding it, and the catalog
// image: one image that OLM v1 reads as a ClusterCatalog and OLM v0 serves
// through a CatalogSource with grpcPodConfig.extractContent (OLM's own opm
// serves it, so the image holds the catalog's files only). The catalog is
// checked with operator-registry's own model validation before anything
// is written (the same checks opm validate runs).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/kubevirt/virt-platform-autopilot/hack/image/oci"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"sigs.k8s.io/yaml"
)

// configsDir is where the catalog image holds the FBC, named by its label.
const configsDir = "configs"

func main() {
	bundleDir := flag.String("bundle", "bundle", "the registry+v1 bundle folder (manifests/, metadata/)")
	out := flag.String("out", "_output", "where to write bundle-image/, catalog-image/ (OCI layouts) and catalog/ (the FBC)")
	bundleRef := flag.String("bundle-image", "", "the bundle image's reference (the catalog names it by digest)")
	catalogRef := flag.String("catalog-image", "", "the catalog image's reference")
	flag.Parse()
	if err := run(*bundleDir, *out, *bundleRef, *catalogRef, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(bundleDir, out, bundleRef, catalogRef string, w io.Writer) error {
	if bundleRef == "" || catalogRef == "" {
		return fmt.Errorf("-bundle-image and -catalog-image are required")
	}
	bref, err := name.ParseReference(bundleRef)
	if err != nil {
		return fmt.Errorf("-bundle-image: %w", err)
	}
	if _, err := name.ParseReference(catalogRef); err != nil {
		return fmt.Errorf("-catalog-image: %w", err)
	}
	csv, labels, err := readBundle(bundleDir)
	if err != nil {
		return err
	}
	bundleImg, err := image(labels, bundleDir, []string{"manifests", "metadata"}, "")
	if err != nil {
		return err
	}
	digest, err := bundleImg.Digest()
	if err != nil {
		return err
	}
	pinned := bref.Context().Digest(digest.String()).String()
	cfg, err := fbc(csv, labels, pinned)
	if err != nil {
		return err
	}
	var fbcYAML bytes.Buffer
	if err := declcfg.WriteYAML(*cfg, &fbcYAML); err != nil {
		return err
	}
	pkg := labels["operators.operatorframework.io.bundle.package.v1"]
	catDir := filepath.Join(out, "catalog", pkg)
	if err := os.MkdirAll(catDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(catDir, "catalog.yaml"), fbcYAML.Bytes(), 0o644); err != nil {
		return err
	}
	catalogImg, err := image(map[string]string{"operators.operatorframework.io.index.configs.v1": "/" + configsDir},
		filepath.Join(out, "catalog"), []string{pkg}, configsDir)
	if err != nil {
		return err
	}
	for _, l := range []struct {
		img v1.Image
		dir string
		ref string
	}{{bundleImg, "bundle-image", bundleRef}, {catalogImg, "catalog-image", catalogRef}} {
		if err := oci.Write(w, filepath.Join(out, l.dir), l.img, l.ref); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "the catalog names the bundle as %s: push the bundle image before the catalog is used\n", pinned)
	return nil
}

// readBundle reads the bundle's CSV and its metadata annotations.
func readBundle(dir string) (*operatorsv1alpha1.ClusterServiceVersion, map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(raw, &meta); err != nil {
		return nil, nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	csvs, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(csvs) != 1 {
		return nil, nil, fmt.Errorf("want one ClusterServiceVersion in %s/manifests, found %d", dir, len(csvs))
	}
	raw, err = os.ReadFile(csvs[0])
	if err != nil {
		return nil, nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(raw, csv); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", csvs[0], err)
	}
	return csv, meta.Annotations, nil
}

// fbc is the catalog: the package, its default channel with this bundle
// (its skipRange, so an earlier version upgrades to it), and the bundle
// with the properties OLM resolves on, checked by operator-registry's
// model validation.
func fbc(csv *operatorsv1alpha1.ClusterServiceVersion, labels map[string]string, bundleImage string) (*declcfg.DeclarativeConfig, error) {
	pkg := labels["operators.operatorframework.io.bundle.package.v1"]
	channel := labels["operators.operatorframework.io.bundle.channel.default.v1"]
	if pkg == "" || channel == "" {
		return nil, fmt.Errorf("the bundle's annotations name no package or default channel")
	}
	version := csv.Spec.Version.String()
	csvJSON, err := yaml.Marshal(csv)
	if err != nil {
		return nil, err
	}
	csvJSON, err = yaml.YAMLToJSON(csvJSON)
	if err != nil {
		return nil, err
	}
	props := []property.Property{property.MustBuildPackage(pkg, version)}
	related := []declcfg.RelatedImage{{Name: "bundle", Image: bundleImage}}
	for _, r := range csv.Spec.RelatedImages {
		related = append(related, declcfg.RelatedImage{Name: r.Name, Image: r.Image})
	}
	sort.Slice(related[1:], func(i, j int) bool { return related[1+i].Name < related[1+j].Name })
	cfg := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: channel}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: pkg, Name: channel,
			Entries: []declcfg.ChannelEntry{{Name: csv.Name, SkipRange: csv.Annotations["olm.skipRange"]}}}},
		Bundles: []declcfg.Bundle{{Schema: declcfg.SchemaBundle, Package: pkg, Name: csv.Name, Image: bundleImage,
			Properties: append(props, property.MustBuildCSVMetadata(*csv)), RelatedImages: related, CsvJSON: string(csvJSON)}},
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return nil, fmt.Errorf("the catalog is not valid: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("the catalog is not valid: %w", err)
	}
	cfg.Bundles[0].CsvJSON = "" // carried by the olm.csv.metadata property; not written
	return cfg, nil
}

// image is the files of dirs under root (under prefix in the image),
// with labels.
func image(labels map[string]string, root string, dirs []string, prefix string) (v1.Image, error) {
	var files []oci.File
	if prefix != "" {
		files = append(files, oci.File{Name: prefix, Mode: 0o755, Dir: true})
	}
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			name := path.Join(prefix, filepath.ToSlash(rel))
			if e.IsDir() {
				files = append(files, oci.File{Name: name, Mode: 0o755, Dir: true})
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files = append(files, oci.File{Name: name, Mode: 0o644, Data: raw})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return oci.Image(files, func(c *v1.Config) { c.Labels = labels })
}
