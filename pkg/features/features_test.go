package features_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		return rendercontext.New(rendercontext.Facts{HCO: u})
	}
	// An outcome that is a verdict is the evaluation's; any other is what
	// the controller last did with an included asset.
	last := map[string]engine.Outcome{}
	dec := func(name string, o engine.Outcome, reason string) engine.Decision {
		a, _ := cat.Get(name)
		switch o {
		case engine.Applied, engine.Unchanged, engine.Throttled, engine.Settling, engine.Failed:
			last[name] = o
			return engine.Decision{Asset: a, Verdict: engine.VerdictIncluded, Reason: reason}
		}
		delete(last, name)
		return engine.Decision{Asset: a, Verdict: engine.Verdict(o), Reason: reason}
	}
	lastOf := func(asset string) (engine.Outcome, string, bool) {
		o, ok := last[asset]
		return o, "last: " + string(o), ok
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
		{"a write held", true, engine.Settling, engine.Unchanged, features.Waiting, features.Active},
		{"a fight", true, engine.Unchanged, engine.Throttled, features.Degraded, features.Active},
		{"no hardware", true, engine.Inactive, engine.Retained, features.NotApplicable, features.Active},
		{"excluded", true, engine.Excluded, engine.Unmanaged, features.Excluded, features.Active},
		{"paused", true, engine.Paused, engine.Paused, features.Paused, features.Active},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := []engine.Decision{dec("f1", tc.f1, "r1"), dec("f2", tc.f2, "r2"), dec("g1", engine.Applied, "")}
			ss := features.Of(cat, hco(tc.on), ds, lastOf)
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

// A write the gate holds for an HCO input not understood (Invalid) is no
// compliance: the feature says so, as the decision itself would.
func TestHeldForAnInputNotUnderstood(t *testing.T) {
	cat, err := catalog.Parse(nil, []byte(`
features:
  - {name: g, description: d, maturity: ga}
assets:
  - {name: g1, feature: g, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cat.Get("g1")
	rc := rendercontext.New(rendercontext.Facts{HCO: &unstructured.Unstructured{Object: map[string]any{}}})
	ds := []engine.Decision{{Asset: a, Verdict: engine.VerdictIncluded}}
	held := func(string) (engine.Outcome, string, bool) {
		return engine.Invalid, "held: disabled-resources not understood", true
	}
	invalid := features.Of(cat, rc, []engine.Decision{{Asset: a, Verdict: engine.VerdictInvalid, Reason: "x"}}, nil)
	if ss := features.Of(cat, rc, ds, held); ss[0].State != invalid[0].State || ss[0].State == features.Active {
		t.Fatalf("held Invalid reads %s, an Invalid decision %s", ss[0].State, invalid[0].State)
	}
}

// A feature that needs an object a person creates (the fence template) is
// waiting for it while it is absent, and active once it exists.
func TestNeeds(t *testing.T) {
	cat, err := catalog.Parse(nil, []byte(`
features:
  - name: f
    description: d
    maturity: tech-preview
    switch: enable-f
    needs:
      object: {apiVersion: example.io/v1, kind: Template, namespace: ns, name: t}
      what: the admin's template
assets:
  - {name: f1, feature: f, path: x, component: X, tier: 3, reconcile_order: 1, install: opt-in, disruption: none,
     reads: [{apiVersion: example.io/v1, kind: Template, namespace: ns, name: t}],
     conditions: [{type: annotation, key: platform.kubevirt.io/enable-f, value: "true"}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	key := rendercontext.KeyOf(cat.Assets[0].Reads[0])
	a, _ := cat.Get("f1")
	for _, tc := range []struct {
		obj  *unstructured.Unstructured
		want features.State
	}{{nil, features.Waiting}, {&unstructured.Unstructured{Object: map[string]any{}}, features.Active}} {
		hco := &unstructured.Unstructured{Object: map[string]any{}}
		hco.SetAnnotations(map[string]string{"platform.kubevirt.io/enable-f": "true"})
		rc := rendercontext.New(rendercontext.Facts{HCO: hco, Observed: rendercontext.Observed{Objects: map[rendercontext.ObjectKey]*unstructured.Unstructured{key: tc.obj}}})
		ss := features.Of(cat, rc, []engine.Decision{{Asset: a, Verdict: engine.VerdictIncluded}}, nil)
		if ss[0].State != tc.want {
			t.Fatalf("object %v: state %s (%s), want %s", tc.obj != nil, ss[0].State, ss[0].Reason, tc.want)
		}
	}
	if _, err := catalog.Parse(nil, []byte(`
features:
  - {name: f, description: d, maturity: ga, needs: {object: {apiVersion: v1, kind: ConfigMap, name: c}, what: w}}
assets:
  - {name: f1, feature: f, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`)); err == nil {
		t.Fatal("a need no asset reads must be refused: nothing would watch it")
	}
}

// A feature that reports swap names the pools whose VM nodes do not all
// report it, beside its state; with swap everywhere it says nothing more.
func TestReportsSwap(t *testing.T) {
	cat, err := catalog.Parse(nil, []byte(`
features:
  - {name: s, description: d, maturity: ga, reports: [swap]}
assets:
  - {name: s1, feature: s, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cat.Get("s1")
	ds := []engine.Decision{{Asset: a, Verdict: engine.VerdictIncluded}}
	node := func(name string, swap int64) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &swap}
		return n
	}
	rc := rendercontext.New(rendercontext.Facts{Nodes: []corev1.Node{node("a", 1<<30), node("b", 0)}})
	s := features.Of(cat, rc, ds, nil)[0]
	if s.State != features.Active || !strings.Contains(s.Reason, "1 of 2 VM nodes report swap") {
		t.Errorf("a gap is reported: %s %q", s.State, s.Reason)
	}
	rc = rendercontext.New(rendercontext.Facts{Nodes: []corev1.Node{node("a", 1<<30), node("b", 1<<30)}})
	if s := features.Of(cat, rc, ds, nil)[0]; s.Reason != "" {
		t.Errorf("no gap, no note: %q", s.Reason)
	}
	if _, err := catalog.Parse(nil, []byte(`
features:
  - {name: s, description: d, maturity: ga, reports: [swapp]}
assets:
  - {name: s1, feature: s, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`)); err == nil || !strings.Contains(err.Error(), "reports") {
		t.Errorf("an unknown report is refused: %v", err)
	}
}

// The REBOOTS column names the pools of the assets the autopilot writes,
// as status shows them: an excluded master asset reboots nothing.
func TestTableRebootsOnlyWhatIsWritten(t *testing.T) {
	var b strings.Builder
	err := features.WriteTable(&b, []features.Status{{Name: "psi", State: features.Active, Assets: []features.AssetStatus{
		{Name: "psi-enable", Outcome: string(engine.Unchanged), Disruption: "reboots pool worker"},
		{Name: "psi-enable-master", Outcome: string(engine.Excluded), Disruption: "reboots pool master"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Split(b.String(), "\n")[1]
	if !strings.Contains(line, "pool worker") || strings.Contains(line, "master") {
		t.Fatalf("%q", line)
	}
}
