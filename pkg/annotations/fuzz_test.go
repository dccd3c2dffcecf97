package annotations

import "testing"

// FuzzParse: any disabled-resources value parses into rules and errors without
// panicking; every rule has an exact kind and a name, and matching with it
// never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"MachineConfig/50-*", "KubeDescheduler/openshift-*/clus*", "bad", "a/b/c/d", "*/x", "K/[", ",,", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		set, _ := ParseDisabledResources(v)
		for _, r := range set.Rules {
			if r.Kind == "" || r.Name == "" {
				t.Fatalf("%q gave an empty rule %+v", v, r)
			}
		}
		set.Match("MachineConfig", "ns", "50-x")
	})
}
