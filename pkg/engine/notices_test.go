package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
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
	for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview(rc)) {
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

// Each class of HCO input the autopilot does not act on is a notice with
// the annotation, a bounded reason and a message naming the value.
func TestNoticesNameEveryInputNotActedOn(t *testing.T) {
	hco := map[string]string{
		"platform.kubevirt.io/enable-logging":   "ture",
		"platform.kubevirt.io/enable-loadawre":  "true",
		"platform.kubevirt.io/enable-loadaware": "ON",
		annotations.Autopilot:                   "all-of-it",
		annotations.DisabledResources:           "machineconfig/99-worker-kubevirt-psi-karg\nMachineConfig/99-nope, KubeletConfigg/x, broken",
		annotations.Asset:                       "hco-golden-config",
	}
	ev, cat, _ := setup(t, hco)
	rc := newContext(hco)
	ds := ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview(rc))
	got := map[string]bool{}
	for _, n := range ev.Notices(rc, cat, ds) {
		got[n.Annotation+" "+string(n.Reason)] = true
		if n.Message == "" || n.Event == "" {
			t.Errorf("notice %+v: no message or event", n)
		}
	}
	for _, want := range []string{
		"platform.kubevirt.io/enable-logging malformed",
		"platform.kubevirt.io/enable-loadawre unknown_annotation",
		"platform.kubevirt.io/autopilot unknown_name",
		"platform.kubevirt.io/disabled-resources matches_nothing",
		"platform.kubevirt.io/disabled-resources malformed",
	} {
		if !got[want] {
			t.Errorf("no notice %q; got %v", want, got)
		}
	}
	for k := range got {
		if strings.Contains(k, "enable-loadaware ") || strings.Contains(k, annotations.Asset) {
			t.Errorf("an understood input is a notice: %s", k)
		}
	}
	var msgs []string
	for _, n := range ev.Notices(rc, cat, ds) {
		msgs = append(msgs, n.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{`"MachineConfig/99-nope"`, `"KubeletConfigg/x"`} {
		if !strings.Contains(all, want) {
			t.Errorf("unmatched entry %s not named:\n%s", want, all)
		}
	}
	if strings.Contains(all, "99-worker-kubevirt-psi-karg\" matches") {
		t.Errorf("an entry matching a rendered object (kind in lower case) is reported:\n%s", all)
	}
}

// While the golden HCO has not converged (its write throttled or failed,
// its decision invalid), every asset that renders from the HCO keeps its
// last applied state; the others proceed.
func TestDependentsWaitForTheHCOToConverge(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	var waited, proceeded int
	for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, func(d *engine.Decision) engine.StepResult {
		if d.Asset.ReconcileOrder == 0 {
			return engine.StepResult{Unconverged: "Throttled: a fight over /spec/x"}
		}
		return engine.StepResult{}
	}) {
		if d.Asset.ReconcileOrder == 0 {
			continue
		}
		reads := ev.Renderer.ReadsHCO(d.Asset.Path)
		switch {
		case reads && d.Outcome != engine.MissingDependency:
			t.Errorf("asset %s reads the HCO but is %s while it has not converged", d.Asset.Name, d.Outcome)
		case reads:
			waited++
			if !strings.Contains(d.Reason, "a fight over /spec/x") {
				t.Errorf("asset %s: reason %q does not say why", d.Asset.Name, d.Reason)
			}
		case d.Outcome == engine.Included:
			proceeded++
		}
	}
	if waited == 0 || proceeded == 0 {
		t.Fatalf("want some assets waiting and some proceeding: %d waited, %d proceeded", waited, proceeded)
	}
}

// Every asset of a kind that is exclusive per scope declares it, so no
// such object is ever applied over a foreign one.
func TestExclusiveKindsAreDeclared(t *testing.T) {
	exclusiveKinds := map[string]string{"KubeletConfig": catalog.ExclusivePool}
	ev, cat, _ := setup(t, nil)
	for i := range cat.Assets {
		a := &cat.Assets[i]
		k, _ := ev.Renderer.StaticKind(a.Path)
		if want, ok := exclusiveKinds[k]; ok && a.Exclusive != want {
			t.Errorf("asset %s renders a %s: it must declare exclusive: %s", a.Name, k, want)
		}
	}
}

// The HCO asset held in backoff (no render, no object) still holds its
// dependents: it is known by its asset, not by a rendered object.
func TestDependentsWaitWhileTheHCOIsInBackoff(t *testing.T) {
	ev, cat, rc := setup(t, map[string]string{"platform.kubevirt.io/enable-loadaware": "true"})
	ev.Hold = func(a *catalog.Asset) (string, bool) {
		return "retrying in 4s: apply refused by a webhook", a.ReconcileOrder == 0
	}
	waited := 0
	for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, func(*engine.Decision) engine.StepResult { return engine.StepResult{} }) {
		if d.Asset.ReconcileOrder != 0 && ev.Renderer.ReadsHCO(d.Asset.Path) {
			if d.Outcome != engine.MissingDependency || !d.AwaitsHCO || !strings.Contains(d.Reason, "refused by a webhook") {
				t.Errorf("asset %s: %s %q while the HCO is in backoff", d.Asset.Name, d.Outcome, d.Reason)
			}
			waited++
		}
	}
	if waited == 0 {
		t.Fatal("no asset reads the HCO")
	}
}

// A root-exclusion entry not understood (malformed, or a kind no asset
// renders: a plural) never lowers a protection: what reboots a pool or
// changes remediation is left as it is; the rest, and an understood list,
// proceed.
func TestExclusionNotUnderstoodHoldsRebootingAssets(t *testing.T) {
	for value, held := range map[string]bool{
		"machineconfigs/99-worker-kubevirt-psi-karg": true,
		"MachineConfig:99-worker-kubevirt-psi-karg":  true,
		"MachineConfig/99-nope, broken":              true,
		"machineconfig/99-nope":                      false,
		"configmaps/x/y, KubeDescheduler/*/cluster":  true,
	} {
		ev, cat, rc := setup(t, map[string]string{annotations.DisabledResources: value})
		for _, d := range ev.Plan(context.Background(), cat, rc, liveMap{}, engine.Preview(rc)) {
			if d.Asset.Name == "psi-enable" && (d.Outcome == engine.Invalid) != held {
				t.Errorf("%q: psi-enable %s (%s), held=%v wanted", value, d.Outcome, d.Reason, held)
			}
			if d.Asset.Name == "hco-golden-config" && d.Outcome != engine.Included {
				t.Errorf("%q: the golden config (no reboot) is %s", value, d.Outcome)
			}
		}
	}
}
