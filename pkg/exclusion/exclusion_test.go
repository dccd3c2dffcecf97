package exclusion

import "testing"

func TestParseAndMatch(t *testing.T) {
	s, errs := Parse("KubeDescheduler/cluster, MachineConfig/50-swap-*, ConfigMap/ns-*/cfg, bad, */x, MachineConfig/[")
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
	}
	for _, c := range cases {
		if _, got := s.Match(c.kind, c.ns, c.name); got != c.want {
			t.Errorf("Match(%s %s/%s) = %v, want %v", c.kind, c.ns, c.name, got, c.want)
		}
	}
}
