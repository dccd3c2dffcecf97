package engine

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// An object an asset reads is one of its facts: its meaning changing (a
// fence template's BMC check flips) changes the print; a heartbeat, a new
// resourceVersion or managedFields do not, or a write would wait for ever.
func TestFactPrintFollowsReadObjectsMeaningOnly(t *testing.T) {
	ref := catalog.ObjectRef{APIVersion: "fence-agents-remediation.medik8s.io/v1alpha1", Kind: "FenceAgentsRemediationTemplate", Namespace: "ns", Name: "t"}
	a := &catalog.Asset{Name: "node-health-check", Reads: []catalog.ObjectRef{ref}}
	template := func(status, stamp, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"agent": "fence_ipmilan"},
			"status": map[string]any{"observedGeneration": int64(len(rv)), "conditions": []any{map[string]any{
				"type": "FenceAgentStatusValidationSucceeded", "status": status, "lastTransitionTime": stamp}}},
		}}
		u.SetResourceVersion(rv)
		return u
	}
	printOf := func(u *unstructured.Unstructured) string {
		rc := rendercontext.New(rendercontext.Facts{})
		rc.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{rendercontext.KeyOf(ref): u}
		p, err := FactPrint(a, rc, render.Reads{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := printOf(template("True", "2026-01-01T00:00:00Z", "1"))
	if printOf(template("True", "2026-02-02T00:00:00Z", "22")) != base {
		t.Error("a heartbeat or a new resourceVersion is not a changed fact")
	}
	if printOf(template("False", "2026-01-01T00:00:00Z", "1")) == base {
		t.Error("the BMC check flipping is a changed fact")
	}
	if printOf(nil) == base {
		t.Error("the template going away is a changed fact")
	}
	rc := rendercontext.New(rendercontext.Facts{})
	rc.ObjectErrs = map[rendercontext.ObjectKey]error{rendercontext.KeyOf(ref): errors.New("forbidden")}
	if p, err := FactPrint(a, rc, render.Reads{}); err != nil || p == base {
		t.Errorf("a read that failed is unknown, a print of its own, never an error (the render fails only if it needs it): %q %v", p, err)
	}
	// An asset that reads no fact prints NoFacts.
	plain := &catalog.Asset{Name: "psi"}
	if p, _ := FactPrint(plain, rendercontext.New(rendercontext.Facts{}), render.Reads{}); p != settle.NoFacts {
		t.Errorf("an asset reading no fact: %q", p)
	}
}
