package engine_test

import (
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// The settle stamp on a written object changes only when the object it
// was rendered with changes: facts that change nothing the object renders
// from cost no write, and an earlier release's stamp of the same facts is
// kept (an upgrade writes nothing for it); any other stamp is replaced by
// "facts/object" (an earlier scheme's alone is no drift: apply.Syncer).
func TestSettleStampIsKeptWhileTheObjectIsTheSame(t *testing.T) {
	fresh := evaluate(t, nil, "psi-enable", liveMap{})
	if fresh.Desired == nil || fresh.FactPrint == "" || fresh.ObjectPrint == "" {
		t.Fatalf("psi-enable: %s %s", fresh.Verdict, fresh.Reason)
	}
	now := settle.Print{Facts: fresh.FactPrint, Object: fresh.ObjectPrint}.Stamp()
	if got := fresh.Desired.GetAnnotations()[annotations.Facts]; got != now {
		t.Fatalf("a new object's stamp %q, want %q", got, now)
	}
	key := fresh.Desired.GetKind() + "//" + fresh.Desired.GetName()
	for _, c := range []struct {
		live, want string
	}{
		{"othrfacts/" + fresh.ObjectPrint, "othrfacts/" + fresh.ObjectPrint}, // the facts changed, the object did not
		{fresh.FactPrint, fresh.FactPrint},                                   // an earlier release's stamp of the same facts
		{"othrfacts", now},                                                   // an earlier scheme's facts alone: the new stamp (apply.Syncer writes it only with a real change)
		{settle.Scheme + "othrfacts", now},                                   // facts alone of this scheme, other facts
		{"othrfacts/othrobject", now},                                        // facts and object changed
		{"", now},                                                            // never stamped
	} {
		live := fresh.Desired.DeepCopy()
		a := live.GetAnnotations()
		a[annotations.Facts] = c.live
		live.SetAnnotations(a)
		d := evaluate(t, nil, "psi-enable", liveMap{key: live})
		if got := d.Desired.GetAnnotations()[annotations.Facts]; got != c.want {
			t.Errorf("live stamp %q: desired %q, want %q", c.live, got, c.want)
		}
	}
}
