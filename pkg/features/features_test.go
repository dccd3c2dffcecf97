package features_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func TestStates(t *testing.T) {
	cat, err := catalog.Parse(nil, []byte(`
features:
  - {name: f, description: d, maturity: tech-preview, switch: enable-f}
  - {name: g, description: d, maturity: ga}
assets:
  - {name: f1, feature: f, path: x, component: X, tier: 3, reconcile_order: 1, install: opt-in, disruption: none,
     conditions: [{type: annotation, key: platform.kubevirt.io/enable-f, value: "true"}]}
  - {name: f2, feature: f, path: x, component: X, tier: 3, reconcile_order: 1, install: opt-in, disruption: none,
     conditions: [{type: annotation, key: platform.kubevirt.io/enable-f, value: "true"}]}
  - {name: g1, feature: g, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	hco := func(on bool) *rendercontext.RenderContext {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if on {
			u.SetAnnotations(map[string]string{"platform.kubevirt.io/enable-f": "true"})
		}
		rc := &rendercontext.RenderContext{}
		rc.SetHCO(u)
		return rc
	}
	dec := func(name string, o engine.Outcome, reason string) engine.Decision {
		a, _ := cat.Get(name)
		return engine.Decision{Asset: a, Outcome: o, Reason: reason}
	}
	cases := []struct {
		name         string
		on           bool
		f1, f2       engine.Outcome
		wantF, wantG features.State
	}{
		{"switch off wins", false, engine.Failed, engine.Inactive, features.Off, features.Active},
		{"applied", true, engine.Unchanged, engine.Applied, features.Active, features.Active},
		{"one failed", true, engine.Unchanged, engine.Failed, features.Degraded, features.Active},
		{"waiting for a CRD", true, engine.MissingDependency, engine.Unchanged, features.Waiting, features.Active},
		{"no hardware", true, engine.Inactive, engine.Retained, features.NotApplicable, features.Active},
		{"excluded", true, engine.Excluded, engine.Unmanaged, features.Excluded, features.Active},
		{"paused", true, engine.Paused, engine.Paused, features.Paused, features.Active},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := []engine.Decision{dec("f1", tc.f1, "r1"), dec("f2", tc.f2, "r2"), dec("g1", engine.Applied, "")}
			ss := features.Of(cat, hco(tc.on), ds)
			if len(ss) != 2 || ss[0].State != tc.wantF || ss[1].State != tc.wantG {
				t.Fatalf("states: %+v", ss)
			}
			if ss[0].Maturity != catalog.TechPreview || ss[0].Switch != "platform.kubevirt.io/enable-f" || len(ss[0].Assets) != 2 {
				t.Fatalf("static facts: %+v", ss[0])
			}
			if tc.wantF != features.Active && ss[0].Reason == "" {
				t.Fatalf("state %s without a reason", tc.wantF)
			}
		})
	}
}
