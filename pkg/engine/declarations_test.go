package engine_test

import (
	"context"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

// Every asset's template names its kind literally, and that is the kind it
// renders: the fallback that judges disabled-resources entries when an
// asset's render fails.
func TestStaticKindIsTheRenderedKind(t *testing.T) {
	on := map[string]string{}
	ev, cat, _ := setup(t, nil)
	for _, f := range cat.Features {
		if f.Switch != "" {
			on[f.SwitchAnnotation()] = "true"
		}
	}
	rc := newContext(on)
	for _, d := range ev.Preview(context.Background(), cat, rc, liveMap{}).Decisions {
		k, ok := ev.Renderer.StaticKind(d.Asset.Path)
		if !ok {
			t.Errorf("asset %s: no literal top-level kind in %s", d.Asset.Name, d.Asset.Path)
			continue
		}
		if d.Rendered != nil && d.Rendered.GetKind() != k {
			t.Errorf("asset %s: static kind %s, rendered %s", d.Asset.Name, k, d.Rendered.GetKind())
		}
	}
}

// Every asset of a kind that is exclusive per scope declares it, so no
// such object is ever applied over a foreign one.
func TestExclusiveKindsAreDeclared(t *testing.T) {
	exclusiveKinds := map[string]string{}
	for scope, kind := range catalog.ExclusiveScopes {
		exclusiveKinds[kind] = scope
	}
	ev, cat, _ := setup(t, nil)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		k, _ := ev.Renderer.StaticKind(a.Path)
		if want, ok := exclusiveKinds[k]; ok && a.Exclusive != want {
			t.Errorf("asset %s renders a %s: it must declare exclusive: %s", a.Name, k, want)
		}
	}
}
