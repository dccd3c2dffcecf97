package testenv

import (
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// ClusterCRDs are the CRDs of a realistic cluster: every vendor CRD under
// vendorDir (the HyperConverged one served as v1 only, see ReadVendorHCO),
// or, without vendorDir, the project's minimal ones in test/crds.
func ClusterCRDs(vendorDir string) ([]*apiextensionsv1.CustomResourceDefinition, string, error) {
	if vendorDir == "" {
		dir := filepath.Join(RepoRoot(), "test", "crds")
		crds, err := crdsIn(dir, nil)
		return crds, dir, err
	}
	hco, err := ReadVendorHCO(vendorDir)
	if err != nil {
		return nil, "", err
	}
	crds, err := crdsIn(vendorDir, hco)
	return crds, vendorDir, err
}

// crdsIn reads every CRD in dir's YAML files (recursively); hco, when set,
// replaces the HyperConverged CRD found there.
func crdsIn(dir string, hco *apiextensionsv1.CustomResourceDefinition) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	if hco != nil {
		out = append(out, hco)
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		crd, err := ReadCRD(path)
		if err != nil || crd.Kind != "CustomResourceDefinition" || seen[crd.Name] {
			return nil //nolint:nilerr // not a CRD file, or a second version of one: skip it
		}
		seen[crd.Name] = true
		if hco == nil || crd.Name != hco.Name {
			out = append(out, crd)
		}
		return nil
	})
	return out, err
}

// AssetNamespaces are the namespaces of every asset's object (the HCO
// namespace first): on a real cluster the operators behind them created them.
func AssetNamespaces(hcoNamespace string) ([]string, error) {
	cat, _, err := app.LoadEmbedded()
	if err != nil {
		return nil, err
	}
	r := render.New(assets.FS)
	seen := map[string]bool{hcoNamespace: true}
	out := []string{hcoNamespace}
	for i := range cat.Assets {
		a := &cat.Assets[i]
		u, err := r.RenderOrHead(a.Path, &rendercontext.RenderContext{Namespace: hcoNamespace, AssumeAllKinds: true}, a.Params)
		if err != nil {
			return nil, err
		}
		if ns := u.GetNamespace(); ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out, nil
}
