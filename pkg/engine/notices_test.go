package engine_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

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
		// The shipped autopilot's switch, and its own marks on the HCO.
		"platform.kubevirt.io/enable-mtv": "true",
		"platform.kubevirt.io/managed-by": "virt-platform-autopilot",
		"platform.kubevirt.io/version":    "1.0.0",
	}
	ev, cat, _ := setup(t, hco)
	rc := newContext(hco)
	ds := ev.Preview(context.Background(), cat, rc, liveMap{})
	got := map[string]bool{}
	for _, n := range ev.Notices(cat, ds) {
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
		"platform.kubevirt.io/enable-mtv shipped_autopilot_switch",
	} {
		if !got[want] {
			t.Errorf("no notice %q; got %v", want, got)
		}
	}
	for k := range got {
		if strings.Contains(k, "enable-loadaware ") || strings.Contains(k, annotations.Asset) || strings.Contains(k, "/managed-by") || strings.Contains(k, "/version") {
			t.Errorf("an understood input is a notice: %s", k)
		}
	}
	var msgs []string
	for _, n := range ev.Notices(cat, ds) {
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

// Whatever this autopilot's own state, an HCO that will deploy the WASP
// agent (its overcommit above 100, its switch not keeping it away) is a
// notice; with the switch "true" it is not.
func TestNoticeHCODeploysWasp(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool
	}{{"", true}, {"false", true}, {"report-only", true}, {"true", false}, {"psi-enable,swap-enable", false}} {
		ann := map[string]string{}
		if c.value != "" {
			ann[annotations.Autopilot] = c.value
		}
		ev, cat, _ := setup(t, ann)
		hco := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "kubevirt-hyperconverged"},
			"spec": map[string]any{"virtualization": map[string]any{"higherWorkloadDensity": map[string]any{"memoryOvercommitPercentage": int64(150)}}}}}
		hco.SetAnnotations(ann)
		rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco})
		got := false
		for _, n := range ev.Notices(cat, engine.Evaluation{Context: rc}) {
			got = got || n.Reason == engine.HCODeploysWasp
		}
		if got != c.want {
			t.Errorf("switch %q: notice %v, want %v", c.value, got, c.want)
		}
	}
}
