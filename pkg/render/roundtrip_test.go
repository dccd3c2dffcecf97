package render

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Every template, rendered in a plain context, decodes the same both ways,
// and what objyaml writes of it reads back the same.
func TestObjyamlOverEveryAsset(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	r := New(assets.FS)
	fast := 0
	for _, a := range cat.Assets {
		s := r.take()
		tpl, err := r.template(s, a.Path)
		if err != nil {
			t.Fatal(err)
		}
		s.rc = &rendercontext.RenderContext{Namespace: "openshift-cnv", AssumeAllKinds: true}
		var b strings.Builder
		err = tpl.Execute(&b, Data{Namespace: "openshift-cnv", HCO: map[string]any{}, Params: a.Params, Images: map[string]string{}})
		r.give(s)
		if err != nil {
			continue // needs a richer context; the goldens cover it
		}
		for _, doc := range strings.Split(b.String(), "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			want, err := objyaml.DecodeJSONRoute([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v", a.Name, err)
			}
			got, ok := objyaml.Decode([]byte(doc))
			if !ok {
				continue
			}
			fast++
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: decodes differently", a.Name)
			}
			y, err := objyaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if back, err := objyaml.DecodeJSONRoute(y); err != nil || !reflect.DeepEqual(back, want) {
				t.Errorf("%s: what objyaml writes reads back differently (%v):\n%s", a.Name, err, y)
			}
		}
	}
	if fast < len(cat.Assets)/2 {
		t.Errorf("only %d of %d assets took the fast route", fast, len(cat.Assets))
	}
}
