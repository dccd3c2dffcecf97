package render

import (
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// The head of every asset, with every switch off and on, is its whole
// render restricted to what names the object, and the split reads every
// template's shape (none falls back to the whole document).
func TestHeadOfEveryAsset(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]any{}
	for _, f := range cat.Features {
		if f.Switch != "" {
			on["platform.kubevirt.io/"+f.Switch] = "true"
		}
	}
	contexts := map[string]*rendercontext.RenderContext{
		"off": {Namespace: "openshift-cnv"},
		"on":  {Namespace: "openshift-cnv", HCO: map[string]any{"metadata": map[string]any{"annotations": on}}, AssumeAllKinds: true},
	}
	r := New(assets.FS)
	for name, rc := range contexts {
		for _, a := range cat.Assets {
			full, err := r.Render(a.Path, rc, a.Params, nil)
			h, herr := r.RenderHead(a.Path, rc, a.Params)
			if _, waits := AsWait(err); waits {
				// Waiting for the cluster: the head still names the object.
				if herr != nil || h.GetName() == "" {
					t.Errorf("%s/%s: the render waits (%v), its head does not name the object (%v)", name, a.Name, err, herr)
				}
				continue
			}
			if err != nil {
				// A template that refuses the context refuses it for both.
				if herr == nil {
					t.Errorf("%s/%s: the render fails (%v), its head does not", name, a.Name, err)
				}
				continue
			}
			if err := herr; err != nil {
				t.Fatalf("%s/%s head: %v", name, a.Name, err)
			}
			want := map[string]any{}
			for k, v := range full.Object {
				if headKeys[k] || (k == "spec" && PoolSelectorKinds[full.GetKind()]) {
					want[k] = v
				}
			}
			if !reflect.DeepEqual(h.Object, want) {
				t.Errorf("%s/%s: head\n%v\nwant\n%v", name, a.Name, h.Object, want)
			}
			out, err := r.execute(a.Path, rc, a.Params, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := head(out); !ok {
				t.Errorf("%s/%s: the head split fell back to the whole document", name, a.Name)
			}
		}
	}
}

func TestHeadShapes(t *testing.T) {
	for doc, ok := range map[string]bool{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n":                true,
		"# comment\napiVersion: v1\nkind: KubeletConfig\nmetadata:\n  name: x\nspec:\n  a: 1\n": true,
		"apiVersion: v1\nkind: List\nitems:\n- a\n- b\nmetadata:\n  name: x\n":                  true,
		"apiVersion: v1\nkind: A\n---\napiVersion: v1\nkind: B\n":                               false,
		"apiVersion: v1\nkind: A\nkind: B\n":                                                    false,
		"\"apiVersion\": v1\nkind: A\n":                                                         false,
		"apiVersion: v1\nkind: A\n{a: b}\n":                                                     false,
		"apiVersion: v1\nkind:A\n":                                                              false,
		"apiVersion: v1\nmetadata:\n  name: x\n":                                                false,
		"- a\n- b\n":                                                                            false,
	} {
		if _, got := head([]byte(doc)); got != ok {
			t.Errorf("%q: ok %v, want %v", doc, got, ok)
		}
	}
}

// A head that cannot stand alone is decoded whole: the kind line read
// oddly (a pool-selecting kind then lacks its spec), or an alias to an
// anchor in a dropped section.
func TestHeadFallsBackToTheWholeDocument(t *testing.T) {
	for name, doc := range map[string]string{
		"comment after kind": "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\n# per pool\nmetadata:\n  name: k\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/worker: \"\"\n",
		"quoted kind":        "apiVersion: machineconfiguration.openshift.io/v1\nkind: \"KubeletConfig\"\nmetadata:\n  name: k\nspec:\n  a: 1\n",
		"alias":              "apiVersion: v1\nkind: ConfigMap\ndata: &d\n  a: b\nmetadata:\n  name: x\n  labels: *d\n",
	} {
		r := New(fstest.MapFS{"t.yaml.tpl": {Data: []byte(doc)}}, OneShot())
		full, err := r.Render("t.yaml.tpl", &rendercontext.RenderContext{}, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h, err := r.RenderHead("t.yaml.tpl", &rendercontext.RenderContext{}, nil)
		if err != nil {
			t.Fatalf("%s: head: %v", name, err)
		}
		for _, k := range []string{"metadata", "spec"} {
			if _, ok := full.Object[k]; ok && k == "spec" && !PoolSelectorKinds[full.GetKind()] {
				continue
			}
			if !reflect.DeepEqual(h.Object[k], full.Object[k]) {
				t.Errorf("%s: head %s = %v, want %v", name, k, h.Object[k], full.Object[k])
			}
		}
	}
}
