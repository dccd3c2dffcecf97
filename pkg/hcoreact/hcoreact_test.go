package hcoreact_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// The table is HCO controllers/handlers/wasp-agent/daemonset.go
// shouldDeployWaspAgent (v1.18.0 to main): strings.TrimSpace(value) ==
// "true", or an element of strings.Split(trimmed, ",") that trims to
// "swap-enable"; nothing else (no case folding, no other separator).
func TestSkipsWasp(t *testing.T) {
	for _, c := range []struct {
		value string
		set   bool
		want  bool
	}{
		{"", false, false},
		{"", true, false},
		{"true", true, true},
		{" true\n", true, true},
		{"True", true, false},
		{"yes", true, false},
		{"false", true, false},
		{"report-only", true, false},
		{"swap-enable", true, true},
		{"psi-enable, swap-enable ", true, true},
		{"swap-enable,psi-enable", true, true},
		{"psi-enable\nswap-enable", true, false},
		{"swap", true, false},
		{"true,swap", true, false},
	} {
		if got := hcoreact.SkipsWasp(c.value, c.set); got != c.want {
			t.Errorf("SkipsWasp(%q, %v) = %v, want %v", c.value, c.set, got, c.want)
		}
	}
}

func hcoWith(value *string, overcommit int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hco.kubevirt.io/v1", "kind": "HyperConverged",
		"metadata": map[string]any{"name": rendercontext.HCOName, "namespace": "openshift-cnv"}, "spec": map[string]any{}}}
	if value != nil {
		u.SetAnnotations(map[string]string{annotations.Autopilot: *value})
	}
	if overcommit > 0 {
		_ = unstructured.SetNestedField(u.Object, overcommit, "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
	}
	return u
}

func TestDeploysWasp(t *testing.T) {
	trueV, falseV := "true", "false"
	for _, c := range []struct {
		name string
		hco  *unstructured.Unstructured
		want bool
	}{
		{"no HCO", nil, false},
		{"no overcommit", hcoWith(nil, 0), false},
		{"100%", hcoWith(nil, 100), false},
		{"101%, switch absent", hcoWith(nil, 101), true},
		{"150%, paused", hcoWith(&falseV, 150), true},
		{"150%, true", hcoWith(&trueV, 150), false},
	} {
		if got := hcoreact.DeploysWasp(c.hco); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Crossing the trigger is a privileged reaction; so is stepping back.
	r := hcoreact.Of(hcoWith(nil, 0), hcoWith(nil, 150))
	if len(r) != 2 || !r[1].Privileged || !strings.Contains(r[1].Effect, "WASP") {
		t.Fatalf("crossing: %+v", r)
	}
	if r := hcoreact.Of(hcoWith(nil, 150), hcoWith(&trueV, 150)); len(r) != 1 || !r[0].Privileged || !strings.Contains(r[0].Effect, "removes") {
		t.Fatalf("the switch set: %+v", r)
	}
	if r := hcoreact.Of(hcoWith(&trueV, 0), hcoWith(&trueV, 150)); len(r) != 1 || r[0].Privileged {
		t.Fatalf("overcommit with the switch: %+v", r)
	}
}

// Whatever the HCO's switch says, the golden config never makes the HCO
// deploy the WASP agent: over generated switch values (the HCO's own
// spellings, the autopilot's vocabulary, random lists), with the feature
// on, the rendered HCO (as the HCO reads it, with its annotations)
// crosses the trigger only when the switch skips WASP, and then does
// overcommit (120% here: no node reports swap).
func TestGoldenConfigNeverDeploysWasp(t *testing.T) {
	r := render.New(assets.FS)
	words := []string{"true", "false", "True", "swap-enable", "psi-enable", "report-only", "higher-density", " ", "swap"}
	rng := rand.New(rand.NewPCG(7, 37))
	values := []*string{nil}
	for _, w := range words {
		values = append(values, &w)
	}
	for range 200 {
		n := 1 + rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = words[rng.IntN(len(words))]
		}
		sep := []string{",", ", ", "\n"}[rng.IntN(3)]
		v := strings.Join(parts, sep)
		values = append(values, &v)
	}
	for _, v := range values {
		hco := hcoWith(v, 0)
		ann := hco.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[annotations.SwitchPrefix+"enable-higher-density"] = "true"
		hco.SetAnnotations(ann)
		rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco})
		out, err := r.Render("hco/golden-config.yaml.tpl", rc, nil, nil)
		if err != nil {
			t.Fatalf("switch %s: %v", show(v), err)
		}
		out.SetAnnotations(hco.GetAnnotations()) // the HCO reads its own
		skips := v != nil && hcoreact.SkipsWasp(*v, true)
		if hcoreact.DeploysWasp(out) {
			t.Errorf("switch %s: the golden config makes the HCO deploy WASP", show(v))
		}
		_, overcommits, _ := unstructured.NestedInt64(out.Object, "spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage")
		if overcommits != skips {
			t.Errorf("switch %s: overcommit set %v, the HCO skips WASP %v", show(v), overcommits, skips)
		}
	}
}

func show(v *string) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *v)
}
