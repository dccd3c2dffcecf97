package catalog_test

import (
	"bytes"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

func TestEmbeddedCatalogLoads(t *testing.T) {
	c, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Assets[0].Name != "hco-golden-config" || c.Assets[0].ReconcileOrder != 0 {
		t.Fatalf("the HCO golden config must come first, got %q", c.Assets[0].Name)
	}
	for i := 1; i < len(c.Assets); i++ {
		if c.Assets[i].ReconcileOrder < c.Assets[i-1].ReconcileOrder {
			t.Fatalf("assets not sorted by reconcile_order at %d", i)
		}
	}
	if _, ok := c.Get("descheduler-loadaware"); !ok {
		t.Fatal("descheduler-loadaware missing")
	}
}

func TestCatalogRejects(t *testing.T) {
	fsys := fstest.MapFS{"t.yaml.tpl": {Data: []byte("x")}}
	cases := map[string]struct{ yaml, want string }{
		"unknown field":                   {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, colour: red}]`, "unknown field"},
		"missing template":                {`assets: [{name: a, path: nope.tpl, component: X, tier: 1, reconcile_order: 1, install: always}]`, `path "nope.tpl"`},
		"bad install":                     {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: sometimes}]`, "install"},
		"opt-in without conditions":       {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in}]`, "at least one condition"},
		"unknown condition type":          {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in, conditions: [{type: moon}]}]`, "unknown type"},
		"field of another condition type": {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in, conditions: [{type: feature-gate, name: X, key: y}]}]`, `does not take "key"`},
		"unknown detector":                {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in, conditions: [{type: hardware, detector: flux}]}]`, "unknown detector"},
		"bad topology value":              {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in, conditions: [{type: topology, field: compact, value: "maybe"}]}]`, "topology value"},
		"duplicate": {`features: [{name: f, description: d, maturity: ga}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}, {name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, "duplicate"},
		"MachineConfig without reboot": {`assets: [{name: a, path: t.yaml.tpl, component: MachineConfig, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, `"reboot"`},
		"a reboot that is not one":     {`assets: [{name: a, path: t.yaml.tpl, component: ConfigMap, tier: 1, reconcile_order: 1, install: always, disruption: reboot}]`, `"none"`},
		"no feature":                   {`assets: [{name: a, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, "feature is required"},
		"undeclared feature":           {`assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, `feature "f" is not declared`},
		"switch the asset ignores": {`features: [{name: f, description: d, maturity: ga, switch: enable-f}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, "needs the condition"},
		"bad maturity": {`features: [{name: f, description: d, maturity: beta}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, "maturity"},
		"switch without enable-": {`features: [{name: f, description: d, maturity: ga, switch: f}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, "enable-<name>"},
		"feature without assets": {`features: [{name: f, description: d, maturity: ga}, {name: g, description: d, maturity: ga}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}]`, `feature "g": no asset`},
		"bad image name": {`features: [{name: f, description: d, maturity: ga}]
assets: [{name: a, feature: f, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: opt-in, disruption: none, conditions: [{type: image, name: Foo_Bar}]}]`, "image name"},
		"unknown exclusive scope":         {`assets: [{name: a, path: t.yaml.tpl, component: KubeletConfig, tier: 1, reconcile_order: 1, install: always, exclusive: cluster}]`, "must be pool or nodes"},
		"exclusive scope of another kind": {`assets: [{name: a, path: t.yaml.tpl, component: NodeHealthCheck, tier: 1, reconcile_order: 1, install: always, exclusive: pool}]`, "scope of a KubeletConfig"},
		"bad name":                        {`assets: [{name: A_b, path: t.yaml.tpl, component: X, tier: 1, reconcile_order: 1, install: always}]`, "lower-case"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.Parse(fsys, []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// The compiled catalog is the YAML's, byte for byte as make generate
// writes it, and loads to the same catalog.
func TestCompiledCatalogIsCurrent(t *testing.T) {
	raw, err := fs.ReadFile(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalog.Compile(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fs.ReadFile(assets.FS, assets.CatalogPath+catalog.CompiledSuffix)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("assets/%s%s is stale or missing (%v): run 'make generate'", assets.CatalogPath, catalog.CompiledSuffix, err)
	}
	fromYAML, err := catalog.Parse(assets.FS, raw)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, loaded) {
		t.Fatal("the compiled catalog loads differently from its YAML")
	}
	// A compiled form of other YAML is ignored, not trusted.
	stale := fstest.MapFS{}
	err = fs.WalkDir(assets.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets.FS, p)
		stale[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	stale[assets.CatalogPath].Data = bytes.Replace(raw, []byte("maturity: ga"), []byte("maturity: tech-preview"), 1)
	c, err := catalog.Load(stale, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Features[0].Maturity != "tech-preview" {
		t.Fatalf("a stale compiled catalog was used: %+v", c.Features[0])
	}
}
