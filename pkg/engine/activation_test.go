package engine_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func TestActivationSwitch(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	plan := func(value string, set bool) map[string]engine.Verdict {
		hco := &unstructured.Unstructured{Object: map[string]any{}}
		hco.SetAPIVersion("hco.kubevirt.io/v1")
		hco.SetKind("HyperConverged")
		hco.SetName("kubevirt-hyperconverged")
		if set {
			hco.SetAnnotations(map[string]string{"platform.kubevirt.io/autopilot": value})
		}
		rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco})
		rc.AssumeAllKinds = true
		out := map[string]engine.Verdict{}
		for _, d := range ev.Preview(context.Background(), cat, rc, nil).Decisions {
			out[d.Asset.Name] = d.Verdict
		}
		return out
	}
	for _, v := range []struct {
		value string
		set   bool
	}{{"", false}, {"true", true}, {"TRUE", true}, {"", true}} {
		if got := plan(v.value, v.set); got["psi-enable"] != engine.VerdictIncluded || got["hco-golden-config"] != engine.VerdictIncluded {
			t.Errorf("%q (set %v) activates everything: %v", v.value, v.set, got)
		}
	}
	for _, v := range []string{"false", "flase", " , "} {
		for name, o := range plan(v, true) {
			if o != engine.VerdictPaused {
				t.Errorf("%q pauses everything: %s is %s", v, name, o)
			}
		}
	}
	got := plan("psi-enable, descheduler-loadaware, nope", true)
	if got["psi-enable"] != engine.VerdictIncluded || got["swap-enable"] != engine.VerdictPaused || got["hco-golden-config"] != engine.VerdictPaused {
		t.Errorf("a list activates the listed assets only: %v", got)
	}
	if got["psi-enable-master"] != engine.VerdictInactive {
		t.Errorf("a group name activates the group's members (psi-enable-master belongs to descheduler-loadaware): %v", got["psi-enable-master"])
	}
	// A feature name activates its own assets and those it borrows.
	got = plan("higher-density, numa", true)
	if got["hco-golden-config"] != engine.VerdictIncluded || got["numa-worker"] == engine.VerdictPaused || got["psi-enable"] != engine.VerdictPaused {
		t.Errorf("features activate their members only: golden %s, numa %s, psi %s", got["hco-golden-config"], got["numa-worker"], got["psi-enable"])
	}
	rc := rendercontext.New(rendercontext.Facts{HCO: func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAnnotations(map[string]string{"platform.kubevirt.io/autopilot": "psi-enable, nope"})
		return u
	}()})
	if act := engine.ActivationOf(rc, cat); len(act.Unknown) != 1 || act.Unknown[0] != "nope" || act.Paused {
		t.Errorf("unknown entries are reported, known ones kept: %+v", act)
	}
}
