package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
)

// An oracle that reads no template and no rule of the renderer: an asset
// depends on the golden config's write when evaluating it from the HCO in
// effect and from the HCO that write would make gives another verdict or
// another object. Every such asset waits while the write has not landed
// (it would otherwise be written from a value the cluster does not run,
// or activated by one); some differ by an HCO condition alone.
func TestDependentsOfTheGoldenWriteWait(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	ctx := context.Background()
	ann := allSwitchesOn(cat)
	ann["platform.kubevirt.io/enable-higher-density"] = "true" // the golden write sets ksmConfiguration
	delete(ann, "platform.kubevirt.io/autopilot")
	rc := newContext(ann)
	// A person's own value where the golden config pins another.
	hco := rc.HCOObject()
	if err := unstructured.SetNestedField(hco.Object, int64(9), "spec", "virtualization", "liveMigrationConfig", "parallelMigrationsPerCluster"); err != nil {
		t.Fatal(err)
	}
	rc = rc.WithHCO(hco)
	walk := ev.Begin(ctx, cat, rc, liveMap{})
	if len(walk.Golden) != 1 || walk.Golden[0].Desired == nil {
		t.Fatalf("the golden config: %+v", walk.Golden)
	}
	converged := rc.WithHCO(engine.MergeApplied(rc.HCOObject(), walk.Golden[0].Desired))
	held := map[string]engine.Decision{}
	proceeded := 0
	for _, d := range walk.Rest(nil, "Refused: the API server refused the correct").Decisions {
		held[d.Asset.Name] = d
		if d.Verdict == engine.VerdictIncluded {
			proceeded++
		}
	}
	dependents, byActivation := 0, 0
	for i := range cat.Assets {
		a := &cat.Assets[i]
		if a.ReconcileOrder == 0 {
			continue
		}
		now, then := ev.Evaluate(ctx, a, rc, liveMap{}), ev.Evaluate(ctx, a, converged, liveMap{})
		if now.Verdict == then.Verdict && sameObject(t, now.Desired, then.Desired) {
			continue
		}
		dependents++
		if now.Verdict != then.Verdict {
			byActivation++
		}
		if d := held[a.Name]; d.Verdict != engine.VerdictMissingDependency || !d.AwaitsHCO || !strings.Contains(d.Reason, "refused the correct") {
			t.Errorf("asset %s renders differently once the golden write lands (%s → %s), yet is %s while it has not: %s",
				a.Name, now.Verdict, then.Verdict, d.Verdict, d.Reason)
		}
	}
	if dependents == 0 || byActivation == 0 || proceeded == 0 {
		t.Fatalf("the oracle found %d dependents, %d by activation alone, %d assets proceeded: the HCO here exercises nothing", dependents, byActivation, proceeded)
	}

	// The golden config held in backoff (no render, no object) holds the
	// same dependents: it is known by its asset, not by a rendered object.
	ev.Hold = func(a *catalog.Asset) (string, bool) {
		return "retrying in 4s: apply refused by a webhook", a.ReconcileOrder == 0
	}
	for _, d := range ev.Begin(ctx, cat, rc, liveMap{}).Rest(nil, "").Decisions {
		if d.Asset.ReconcileOrder == 0 {
			continue
		}
		now, then := ev.Evaluate(ctx, d.Asset, rc, liveMap{}), ev.Evaluate(ctx, d.Asset, converged, liveMap{})
		if (now.Verdict != then.Verdict || !sameObject(t, now.Desired, then.Desired)) &&
			(d.Verdict != engine.VerdictMissingDependency || !d.AwaitsHCO || !strings.Contains(d.Reason, "refused by a webhook")) {
			t.Errorf("asset %s: %s %q while the golden config is in backoff", d.Asset.Name, d.Verdict, d.Reason)
		}
	}
}

func sameObject(t *testing.T, a, b any) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
