package engine_test

import (
	"context"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

// Every asset's component is the kind it renders, with every switch on:
// the kind that judges disabled-resources entries when an asset's render
// fails, and that names the golden config.
func TestComponentIsTheRenderedKind(t *testing.T) {
	on := map[string]string{}
	ev, cat, _ := setup(t, nil)
	for _, f := range cat.Features {
		if f.Switch != "" {
			on[f.SwitchAnnotation()] = "true"
		}
	}
	rc := newContext(on)
	for _, d := range ev.Preview(context.Background(), cat, rc, liveMap{}).Decisions {
		if d.Rendered != nil && d.Rendered.GetKind() != d.Asset.Component {
			t.Errorf("asset %s: component %s, rendered %s", d.Asset.Name, d.Asset.Component, d.Rendered.GetKind())
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
	_, cat, _ := setup(t, nil)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		k := a.Component
		if want, ok := exclusiveKinds[k]; ok && a.Exclusive != want {
			t.Errorf("asset %s renders a %s: it must declare exclusive: %s", a.Name, k, want)
		}
	}
}
