package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
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
