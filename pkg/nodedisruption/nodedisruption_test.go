package nodedisruption

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
)

func file(p, content string) any {
	return map[string]any{"path": p, "mode": int64(420), "contents": map[string]any{"source": "data:," + content}}
}

func unit(name, content string, dropins ...string) any {
	u := map[string]any{"name": name, "enabled": true, "contents": content}
	var ds []any
	for _, d := range dropins {
		ds = append(ds, map[string]any{"name": d, "contents": "[Service]\n"})
	}
	if ds != nil {
		u["dropins"] = ds
	}
	return u
}

func spec(files, units []any, kargs ...any) map[string]any {
	s := map[string]any{"config": map[string]any{
		"ignition": map[string]any{"version": "3.4.0"},
		"storage":  map[string]any{"files": files},
		"systemd":  map[string]any{"units": units},
	}}
	if kargs != nil {
		s["kernelArguments"] = kargs
	}
	return s
}

func restart(u string) Action { return Action{Type: Restart, Unit: u} }

func TestActionsFollowMCORules(t *testing.T) {
	script := "/usr/local/bin/kubevirt-thp-tuning"
	svc := "kubevirt-thp-tuning.service"
	p := Policy{
		Files: []PathPolicy{
			{Path: script, Actions: []Action{restart(svc)}},
			{Path: "/etc/containers/registries.d", Actions: []Action{{Type: Reload, Unit: "crio.service"}}},
			{Path: "/etc/containers/registries.d/special.yaml", Actions: []Action{{Type: None}}},
			{Path: "/etc/nmstate/openshift", Actions: []Action{{Type: None}}},
			{Path: "/", Actions: []Action{{Type: None}}},
			{Path: "/etc/slash/", Actions: []Action{{Type: None}}},
		},
		Units:  []NamePolicy{{Name: "chronyd.service", Actions: []Action{{Type: Restart, Unit: "chronyd.service"}}}},
		SSHKey: []Action{{Type: None}},
	}
	base := spec([]any{file(script, "v1")}, []any{unit(svc, "a")})
	for _, tc := range []struct {
		name     string
		old, new map[string]any
		want     []Action
	}{
		{"nothing changed", base, base, []Action{{Type: None}}},
		{"script changed: its policy", base, spec([]any{file(script, "v2")}, []any{unit(svc, "a")}), []Action{restart(svc)}},
		{"mode alone changed: still the file", base, spec([]any{map[string]any{"path": script, "mode": int64(493), "contents": map[string]any{"source": "data:,v1"}}}, []any{unit(svc, "a")}), []Action{restart(svc)}},
		{"unit changed: no policy, reboot", base, spec([]any{file(script, "v1")}, []any{unit(svc, "b")}), []Action{{Type: Reboot}}},
		{"drop-in added: the unit changed", base, spec([]any{file(script, "v1")}, []any{unit(svc, "a", "10-x.conf")}), []Action{{Type: Reboot}}},
		{"created: the unit has no policy", nil, base, []Action{{Type: Reboot}}},
		{"deleted: the unit has no policy", base, nil, []Action{{Type: Reboot}}},
		{"kernel argument: always reboots", base, spec([]any{file(script, "v1")}, []any{unit(svc, "a")}, "transparent_hugepage=madvise"), []Action{{Type: Reboot}}},
		{"file under a directory policy", spec(nil, nil), spec([]any{file("/etc/containers/registries.d/a.yaml", "x")}, nil), []Action{{Type: Reload, Unit: "crio.service"}}},
		{"the longest policy path wins", spec(nil, nil), spec([]any{file("/etc/containers/registries.d/special.yaml", "x")}, nil), []Action{{Type: None}}},
		{"a sibling with the same prefix is not under the directory", spec(nil, nil), spec([]any{file("/etc/containers/registries.d.bak", "x")}, nil), []Action{{Type: Reboot}}},
		{"None beside a restart is dropped", spec(nil, nil), spec([]any{file("/etc/nmstate/openshift/a", "x"), file(script, "x")}, nil), []Action{restart(svc)}},
		{"a unit policy by exact name", spec(nil, []any{unit("chronyd.service", "a")}), spec(nil, []any{unit("chronyd.service", "b")}), []Action{{Type: Restart, Unit: "chronyd.service"}}},
		{"ssh keys: the sshkey policy", map[string]any{"config": map[string]any{"passwd": map[string]any{"users": []any{}}}}, map[string]any{"config": map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "core"}}}}}, []Action{{Type: None}}},
		{"only the Ignition version differs", spec(nil, nil), map[string]any{"config": map[string]any{"ignition": map[string]any{"version": "3.5.0"}, "storage": map[string]any{"files": []any(nil)}, "systemd": map[string]any{"units": []any(nil)}}}, []Action{{Type: None}}},
		// MCO's IsSubdirectory adds a separator to the cleaned policy path:
		// "/" becomes "//", which no file path starts with.
		{"a policy for / covers no file", spec(nil, nil), spec([]any{file("/etc/motd", "x")}, nil), []Action{{Type: Reboot}}},
		{"a policy path with a trailing slash covers the files under it", spec(nil, nil), spec([]any{file("/etc/slash/a.conf", "x")}, nil), []Action{{Type: None}}},
		{"a section MCO does not reconcile", spec(nil, nil), map[string]any{"config": map[string]any{"storage": map[string]any{"directories": []any{map[string]any{"path": "/x"}}}}}, []Action{{Type: Reboot}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Actions(Diff(tc.old, tc.new))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("actions = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestActionsInvariants checks, over generated MachineConfigs, changes and
// policies, what must hold whatever the case: no change does nothing; a
// diff is symmetric; without a policy every change reboots; a unit's
// entry taken away never makes a change lighter; a kernel argument always
// reboots.
func TestActionsInvariants(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	paths := []string{"/usr/local/bin/a", "/usr/local/bin/b", "/etc/x/y.conf", "/etc/x/z/w", "/etc/sysctl.d/s.conf"}
	units := []string{"a.service", "b.service", "system.slice"}
	dirs := []string{"/etc/x", "/etc/x/z", "/usr/local/bin", "/etc"}
	kinds := []Action{{Type: None}, {Type: DaemonReload}, {Type: Drain}, {Type: Reboot}, restart("a.service"), {Type: Reload, Unit: "crio.service"}}
	randomSpec := func() map[string]any {
		var fs, us []any
		for _, p := range paths {
			if rng.Intn(2) == 0 {
				fs = append(fs, file(p, fmt.Sprint(rng.Intn(3))))
			}
		}
		for _, u := range units {
			if rng.Intn(2) == 0 {
				us = append(us, unit(u, fmt.Sprint(rng.Intn(2))))
			}
		}
		var kargs []any
		if rng.Intn(4) == 0 {
			kargs = []any{"a=1"}
		}
		if rng.Intn(8) == 0 {
			return nil
		}
		return spec(fs, us, kargs...)
	}
	randomPolicy := func() Policy {
		var p Policy
		for _, pp := range append(slices.Clone(paths), dirs...) {
			if rng.Intn(2) == 0 {
				p.Files = append(p.Files, PathPolicy{Path: pp, Actions: []Action{kinds[rng.Intn(len(kinds))]}})
			}
		}
		for _, u := range units {
			if rng.Intn(3) == 0 {
				p.Units = append(p.Units, NamePolicy{Name: u, Actions: []Action{kinds[rng.Intn(len(kinds))]}})
			}
		}
		return p
	}
	reboots := func(a []Action) bool { return len(a) == 1 && a[0].Type == Reboot }
	for i := 0; i < 5000; i++ {
		a, b, p := randomSpec(), randomSpec(), randomPolicy()
		c := Diff(a, b)
		if got := p.Actions(Diff(a, a)); !reflect.DeepEqual(got, []Action{{Type: None}}) {
			t.Fatalf("case %d: an unchanged config gives %v", i, got)
		}
		back := Diff(b, a)
		if c.Touches() != back.Touches() || !reflect.DeepEqual(c.Files, back.Files) || !reflect.DeepEqual(c.Units, back.Units) {
			t.Fatalf("case %d: diff is not symmetric: %+v vs %+v", i, c, back)
		}
		if c.Touches() && !reboots((Policy{}).Actions(c)) {
			t.Fatalf("case %d: without a policy %+v gives %v", i, c, (Policy{}).Actions(c))
		}
		got := p.Actions(c)
		if reboots(got) {
			continue
		}
		if c.Reboots != "" {
			t.Fatalf("case %d: %s changed and the node does not reboot: %v", i, c.Reboots, got)
		}
		// Taking a unit's entry away never lightens the verdict (units match
		// by exact name: nothing shallower takes over).
		if len(p.Units) > 0 {
			j := rng.Intn(len(p.Units))
			less := Policy{Files: p.Files, Units: slices.Delete(slices.Clone(p.Units), j, j+1)}
			lessActs := less.Actions(c)
			if !reboots(lessActs) && (Drains(got) && !Drains(lessActs) || slices.Contains(c.Units, p.Units[j].Name)) {
				t.Fatalf("case %d: removing %v turned %v into %v", i, p.Units[j], got, lessActs)
			}
		}
		if a != nil && b != nil && !Drains(got) {
			b2 := map[string]any{}
			for k, v := range b {
				b2[k] = v
			}
			b2["kernelArguments"] = []any{"added=1"}
			if ka := p.Actions(Diff(a, b2)); !reboots(ka) && !reflect.DeepEqual(a["kernelArguments"], b2["kernelArguments"]) {
				t.Fatalf("case %d: a kernel argument change gives %v", i, ka)
			}
		}
	}
}

func TestClusterPolicy(t *testing.T) {
	obj := func(gen, observed int64, cp map[string]any) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "cluster", "generation": gen},
			"status": map[string]any{"observedGeneration": observed,
				"nodeDisruptionPolicyStatus": map[string]any{"clusterPolicies": cp}},
		}
	}
	cp := map[string]any{
		"files": []any{map[string]any{"path": "/usr/local/bin/a", "actions": []any{
			map[string]any{"type": "DaemonReload"},
			map[string]any{"type": "Restart", "restart": map[string]any{"serviceName": "a.service"}}}}},
		"units":  []any{map[string]any{"name": "b.service", "actions": []any{map[string]any{"type": "Reload", "reload": map[string]any{"serviceName": "b.service"}}}}},
		"sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}},
	}
	p, ok, err := ClusterPolicy(obj(3, 3, cp))
	want := Policy{
		Files:  []PathPolicy{{Path: "/usr/local/bin/a", Actions: []Action{{Type: DaemonReload}, restart("a.service")}}},
		Units:  []NamePolicy{{Name: "b.service", Actions: []Action{{Type: Reload, Unit: "b.service"}}}},
		SSHKey: []Action{{Type: None}},
	}
	if err != nil || !ok || !reflect.DeepEqual(p, want) {
		t.Fatalf("ClusterPolicy = %+v %v %v, want %+v", p, ok, err, want)
	}
	if _, ok, err := ClusterPolicy(obj(4, 3, cp)); ok || err != nil {
		t.Fatalf("a status behind its spec is a policy to act on (ok=%v err=%v)", ok, err)
	}
	if _, ok, _ := ClusterPolicy(map[string]any{"metadata": map[string]any{"generation": int64(1)}}); ok {
		t.Fatal("no published status is a policy to act on")
	}
	if _, ok, _ := ClusterPolicy(nil); ok {
		t.Fatal("an absent object is a policy to act on")
	}
	for _, bad := range []map[string]any{
		{"files": []any{map[string]any{"path": "/a", "actions": []any{map[string]any{"type": "Explode"}}}}},
		{"files": []any{map[string]any{"path": "/a", "actions": []any{map[string]any{"type": "Restart"}}}}},
		{"units": []any{map[string]any{"actions": []any{map[string]any{"type": "None"}}}}},
		{"files": []any{map[string]any{"path": "/a"}}},
	} {
		if _, ok, err := ClusterPolicy(obj(1, 1, bad)); err == nil || ok {
			t.Fatalf("%v parsed (ok=%v)", bad, ok)
		}
	}
}

func TestActionStrings(t *testing.T) {
	got := Strings([]Action{{Type: DaemonReload}, restart("a.service"), {Type: Reload, Unit: "crio.service"}, {Type: None}, {Type: Drain}})
	want := []string{"daemon-reload", "restart a.service", "reload crio.service", "none", "drain"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Strings = %v", got)
	}
}
