package engine_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// liveMap is an in-memory LiveReader.
type liveMap map[string]*unstructured.Unstructured

func (l liveMap) Live(_ context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	if u, ok := l[gvk.Kind+"/"+ns+"/"+name]; ok {
		return u.DeepCopy(), nil
	}
	return nil, nil
}

func setup(t testing.TB, hcoAnn map[string]string) (*engine.Evaluator, *catalog.Catalog, *rendercontext.RenderContext) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Evaluator{Renderer: render.New(assets.FS)}, cat, newContext(hcoAnn)
}

// newContext is an offline render context for an HCO with annotations.
func newContext(hcoAnn map[string]string) *rendercontext.RenderContext {
	hco := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "kubevirt-hyperconverged"}}}
	hco.SetAnnotations(hcoAnn)
	rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco})
	rc.AssumeAllKinds = true
	return rc
}

func evaluate(t testing.TB, hcoAnn map[string]string, asset string, live liveMap) engine.Decision {
	ev, cat, rc := setup(t, hcoAnn)
	a, _ := cat.Get(asset)
	return ev.Evaluate(context.Background(), a, rc, live)
}

func TestEvaluateOutcomes(t *testing.T) {
	psiKey := "MachineConfig//99-worker-kubevirt-psi-karg"
	withAnn := func(k, v string) liveMap {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("machineconfiguration.openshift.io/v1")
		u.SetKind("MachineConfig")
		u.SetName("99-worker-kubevirt-psi-karg")
		u.SetAnnotations(map[string]string{k: v})
		return liveMap{psiKey: u}
	}
	cases := []struct {
		name   string
		hco    map[string]string
		asset  string
		live   liveMap
		want   engine.Verdict
		reason string
	}{
		{"always-on asset included", nil, "psi-enable", nil, engine.VerdictIncluded, ""},
		{"opt-in off", nil, "descheduler-loadaware", nil, engine.VerdictInactive, "enable-loadaware"},
		{"opt-in on", map[string]string{"platform.kubevirt.io/enable-loadaware": "true"}, "descheduler-loadaware", nil, engine.VerdictIncluded, ""},
		{"opt-in needs the exact value", map[string]string{"platform.kubevirt.io/enable-loadaware": "false"}, "descheduler-loadaware", nil, engine.VerdictInactive, ""},
		{"root exclusion", map[string]string{annotations.DisabledResources: "MachineConfig/99-*-psi-karg"}, "psi-enable", nil, engine.VerdictExcluded, "disabled-resources"},
		{"unmanaged", nil, "psi-enable", withAnn(annotations.Mode, annotations.ModeUnmanaged), engine.VerdictUnmanaged, ""},
		{"invalid patch", nil, "psi-enable", withAnn(annotations.Patch, `[{"op":"replace","path":"/kind","value":"X"}]`), engine.VerdictInvalid, "protected"},
		{"patch that does not apply", nil, "psi-enable", withAnn(annotations.Patch, `[{"op":"remove","path":"/spec/nothing"}]`), engine.VerdictInvalid, "does not apply"},
		{"invalid ignore-fields", nil, "psi-enable", withAnn(annotations.IgnoreFields, "spec/x"), engine.VerdictInvalid, "must start"},
		{"schedulable masters off", nil, "psi-enable-master", nil, engine.VerdictInactive, "schedulableMasters"},
		// Every input understood or reported, never read as off.
		{"switch in another spelling", map[string]string{"platform.kubevirt.io/enable-loadaware": " Yes"}, "descheduler-loadaware", nil, engine.VerdictIncluded, ""},
		{"switch not understood", map[string]string{"platform.kubevirt.io/enable-loadaware": "ture"}, "descheduler-loadaware", nil, engine.VerdictInvalid, "accepted: true/false"},
		{"switch present and empty", map[string]string{"platform.kubevirt.io/enable-loadaware": ""}, "descheduler-loadaware", nil, engine.VerdictInvalid, "not understood"},
		{"unmanaged in another case", nil, "psi-enable", withAnn(annotations.Mode, " Unmanaged"), engine.VerdictUnmanaged, ""},
		{"mode not understood", nil, "psi-enable", withAnn(annotations.Mode, "unmanged"), engine.VerdictInvalid, "left as it is"},
		{"explicit managed", nil, "psi-enable", withAnn(annotations.Mode, "managed"), engine.VerdictIncluded, ""},
		{"patch as YAML", nil, "psi-enable", withAnn(annotations.Patch, "- op: add\n  path: /metadata/labels/x\n  value: y\n"), engine.VerdictIncluded, ""},
		{"ignore-fields by newlines", nil, "psi-enable", withAnn(annotations.IgnoreFields, "/spec/kernelArguments\n/spec/config\n"), engine.VerdictIncluded, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluate(t, tc.hco, tc.asset, tc.live)
			if d.Verdict != tc.want {
				t.Fatalf("outcome %s (%s), want %s", d.Verdict, d.Reason, tc.want)
			}
			if tc.reason != "" && !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("reason %q should mention %q", d.Reason, tc.reason)
			}
			if d.Verdict == engine.VerdictIncluded {
				if d.Desired.GetLabels()[annotations.ManagedByLabel] != annotations.ManagedByValue {
					t.Fatal("desired objects carry the managed-by label")
				}
				if d.Desired.GetAnnotations()[annotations.Asset] != tc.asset {
					t.Fatal("desired objects name their asset")
				}
			}
		})
	}
}

func TestEvaluateMissingDependency(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	rc.AssumeAllKinds = false
	a, _ := cat.Get("descheduler-loadaware")
	d := ev.Evaluate(context.Background(), a, rc, nil)
	if d.Verdict != engine.VerdictMissingDependency {
		t.Fatalf("got %s", d.Verdict)
	}
	// An inactive opt-in asset is never reported as a missing dependency.
	ev, cat, rc = setup(t, nil)
	rc.AssumeAllKinds = false
	a, _ = cat.Get("descheduler-loadaware")
	if d := ev.Evaluate(context.Background(), a, rc, nil); d.Verdict != engine.VerdictInactive {
		t.Fatalf("got %s", d.Verdict)
	}
}

// BenchmarkSteadyState measures what a no-drift reconcile of one asset costs
// the controller: evaluate (render, patch, mask) plus the local drift
// verdict. No API request is involved.
func BenchmarkSteadyState(b *testing.B) {
	ev, cat, rc := setup(b, nil)
	a, _ := cat.Get("swap-enable")
	first := ev.Evaluate(context.Background(), a, rc, nil)
	live := liveMap{"MachineConfig//90-worker-kubevirt-swap": first.Desired}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := ev.Evaluate(context.Background(), a, rc, live)
		if len(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure)) != 0 {
			b.Fatal("drift in steady state")
		}
	}
}

// BenchmarkPlanCatalog measures a whole no-drift reconcile's CPU work: every
// asset of the catalog evaluated and compared against its live copy.
func BenchmarkPlanCatalog(b *testing.B) {
	ev, cat, rc := setup(b, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	live := liveMap{}
	for _, d := range ev.Preview(context.Background(), cat, rc, nil).Decisions {
		if d.Desired != nil {
			live[d.Desired.GetKind()+"/"+d.Desired.GetNamespace()+"/"+d.Desired.GetName()] = d.Desired
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range ev.Preview(context.Background(), cat, rc, live).Decisions {
			if d.Desired != nil && len(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure)) != 0 {
				b.Fatalf("%s drifts in steady state", d.Asset.Name)
			}
		}
	}
}

// The invalid-annotation metric's reason label comes from the error itself.
func TestInvalidReasonCodes(t *testing.T) {
	live := func(k, v string) liveMap {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("machineconfiguration.openshift.io/v1")
		u.SetKind("MachineConfig")
		u.SetName("99-worker-kubevirt-psi-karg")
		u.SetAnnotations(map[string]string{k: v})
		return liveMap{"MachineConfig//99-worker-kubevirt-psi-karg": u}
	}
	for _, tc := range []struct {
		key, value string
		want       engine.InvalidReason
	}{
		{annotations.Patch, `[{"op":"replace","path":"/kind","value":"X"}]`, engine.ProtectedPath},
		{annotations.Patch, `[{"op":"remove","path":"/spec/nothing"}]`, engine.DoesNotApply},
		{annotations.Patch, `{"not":"a list"}`, engine.Malformed},
		{annotations.IgnoreFields, "/metadata/name", engine.ProtectedPath},
		{annotations.IgnoreFields, "spec/x", engine.Malformed},
	} {
		d := evaluate(t, nil, "psi-enable", live(tc.key, tc.value))
		if d.Verdict != engine.VerdictInvalid || d.InvalidReason != tc.want || d.Annotation != tc.key {
			t.Errorf("%s=%s: got %s/%s/%s, want VerdictInvalid/%s/%s", tc.key, tc.value, d.Verdict, d.Annotation, d.InvalidReason, tc.key, tc.want)
		}
	}
}

// An operand image that is not configured keeps a switched-on asset
// waiting (a missing dependency, reported), never inactive; with the
// switch off the asset is simply off.
func TestEvaluateWaitsForImage(t *testing.T) {
	fsys := fstest.MapFS{"ds.yaml.tpl": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ns}\ndata: {image: \"{{ image \"exporter\" }}\"}\n")}}
	cat, err := catalog.Parse(fsys, []byte(`
features: [{name: f, description: d, maturity: dev-preview, switch: enable-f}]
assets:
  - {name: a, feature: f, path: ds.yaml.tpl, component: ConfigMap, tier: 3, reconcile_order: 1, install: opt-in, disruption: none,
     conditions: [{type: annotation, key: platform.kubevirt.io/enable-f, value: "true"}, {type: image, name: exporter}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(fsys)}
	a, _ := cat.Get("a")
	eval := func(on bool, images map[string]string) engine.Decision {
		hco := &unstructured.Unstructured{Object: map[string]any{}}
		if on {
			hco.SetAnnotations(map[string]string{"platform.kubevirt.io/enable-f": "true"})
		}
		rc := rendercontext.New(rendercontext.Facts{HCO: hco, Observed: rendercontext.Observed{Images: images}})
		rc.AssumeAllKinds = true
		return ev.Evaluate(context.Background(), a, rc, nil)
	}
	if d := eval(true, nil); d.Verdict != engine.VerdictMissingDependency || !strings.Contains(d.Reason, "RELATED_IMAGE_EXPORTER") {
		t.Fatalf("switch on, no image: %s %q", d.Verdict, d.Reason)
	}
	if d := eval(false, nil); d.Verdict != engine.VerdictInactive || !d.IntentOff {
		t.Fatalf("switch off: %s", d.Verdict)
	}
	d := eval(true, map[string]string{"exporter": "quay.io/e:1"})
	if d.Verdict != engine.VerdictIncluded {
		t.Fatalf("switch on, image set: %s %q", d.Verdict, d.Reason)
	}
	if got, _, _ := unstructured.NestedString(d.Desired.Object, "data", "image"); got != "quay.io/e:1" {
		t.Fatalf("image rendered as %q", got)
	}
}
