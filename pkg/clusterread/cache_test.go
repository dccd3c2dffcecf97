package clusterread

import (
	"slices"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Every exclusive kind is read whole, whoever owns it (a foreign object is
// the clash), watched (one appearing is a reason to reconcile) and warmed.
func TestPeerKindsAreFacts(t *testing.T) {
	for gvk := range rendercontext.PeerKinds {
		if !factKinds[gvk] {
			t.Errorf("%s: not read unfiltered (factKinds)", gvk)
		}
		if !slices.Contains(factGVKs, gvk) {
			t.Errorf("%s: not watched and warmed (factGVKs)", gvk)
		}
	}
}
