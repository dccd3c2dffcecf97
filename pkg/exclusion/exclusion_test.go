package exclusion_test

import (
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/exclusion"
)

func TestParseAndMatch(t *testing.T) {
	s, errs := annotations.ParseDisabledResources("KubeDescheduler/cluster, MachineConfig/50-swap-*, ConfigMap/ns-*/cfg, bad, */x, MachineConfig/[\n  kubeletconfig/ours \n")
	if len(errs) != 3 {
		t.Fatalf("want 3 errors (bad, */x, bad glob), got %v", errs)
	}
	cases := []struct {
		kind, ns, name string
		want           bool
	}{
		{"KubeDescheduler", "openshift-kube-descheduler-operator", "cluster", true},
		{"MachineConfig", "", "50-swap-enable", true},
		{"MachineConfig", "", "99-worker-psi", false},
		{"ConfigMap", "ns-a", "cfg", true},
		{"ConfigMap", "other", "cfg", false},
		{"Deployment", "", "cluster", false},
		{"KubeletConfig", "", "ours", true},
	}
	for _, c := range cases {
		if _, got := s.Match(c.kind, c.ns, c.name); got != c.want {
			t.Errorf("Match(%s %s/%s) = %v, want %v", c.kind, c.ns, c.name, got, c.want)
		}
	}
	un := s.Unmatched([]exclusion.Identity{{Kind: "MachineConfig", Name: "50-swap-enable"}, {Kind: "KubeletConfig", Name: "ours"}})
	if len(un) != 2 || un[0].Kind != "KubeDescheduler" || un[1].Kind != "ConfigMap" {
		t.Errorf("Unmatched = %v, want the KubeDescheduler and ConfigMap rules", un)
	}
}
