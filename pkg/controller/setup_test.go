package controller

import (
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
)

// Every asset's kind is known before any fact is read, so every kind the
// catalog manages is watched: an asset whose render waits for the cluster
// (the LokiStack without a default StorageClass) included.
func TestEveryAssetKindIsKnownWithoutFacts(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	kinds := assetKinds(cat, render.New(assets.FS), "openshift-cnv")
	for _, a := range cat.Assets {
		gvk, ok := kinds[a.Name]
		if !ok || gvk.Kind != a.Component {
			t.Errorf("asset %s: kind %v known without facts, want %s", a.Name, gvk, a.Component)
		}
	}
}
