package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// machineConfiguration is MachineConfiguration/cluster as MCO publishes it
// once it has merged the spec's entries (files) into its policy; observed
// says whether its status is current.
func machineConfiguration(files []any, observed bool) *unstructured.Unstructured {
	gen, seen := int64(2), int64(2)
	if !observed {
		seen = 1
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
		"metadata": map[string]any{"name": "cluster", "generation": gen},
		"status": map[string]any{"observedGeneration": seen, "nodeDisruptionPolicyStatus": map[string]any{
			"clusterPolicies": map[string]any{"files": files, "sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}}},
		}},
	}}
}

// declaredFiles renders the autopilot's own entries.
func declaredFiles(t *testing.T) []any {
	t.Helper()
	d := evaluate(t, nil, "node-disruption-policy", nil)
	if d.Desired == nil {
		t.Fatalf("node-disruption-policy: %s %s", d.Verdict, d.Reason)
	}
	files, _, _ := unstructured.NestedSlice(d.Desired.Object, "spec", "nodeDisruptionPolicy", "files")
	if len(files) == 0 {
		t.Fatal("node-disruption-policy declares no entry")
	}
	return files
}

// withPolicy evaluates asset against live under a cluster whose published
// policy is mc (nil: no MachineConfiguration).
func withPolicy(t *testing.T, hcoAnn map[string]string, asset string, live liveMap, mc *unstructured.Unstructured) engine.Decision {
	t.Helper()
	ev, cat, rc := setup(t, hcoAnn)
	rc.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{rendercontext.MachineConfigurationKey: mc}
	a, ok := cat.Get(asset)
	if !ok {
		t.Fatalf("no asset %s", asset)
	}
	return ev.Evaluate(context.Background(), a, rc, live)
}

var nodeAssets = []struct {
	asset string
	sw    string
}{
	{"ksm-zero-only-worker", "enable-ksm-zero-only"},
	{"vm-drain-shutdown-inhibitor-worker", "enable-vm-drain-shutdown-inhibitor"},
	{"thp-tuning-worker", "enable-thp-tuning"},
	{"swap-enable", ""},
	{"psi-enable", ""},
}

// For every node asset and every file and unit it ships, a change of that
// one entry (as an upgrade of the autopilot would make) is judged by MCO's
// rules against the policy the autopilot declares: no drain exactly for the
// declared scripts, a reboot for everything else; creation always reboots;
// so does every change while MCO's policy is unknown or behind its spec.
func TestNodeDisruptionOfEachShippedEntry(t *testing.T) {
	declared := map[string]string{}
	for _, f := range declaredFiles(t) {
		m := f.(map[string]any)
		act := m["actions"].([]any)[0].(map[string]any)
		declared[m["path"].(string)] = act["restart"].(map[string]any)["serviceName"].(string)
	}
	published := machineConfiguration(declaredFiles(t), true)
	behind := machineConfiguration(declaredFiles(t), false)
	seen := 0
	for _, na := range nodeAssets {
		ann := map[string]string{}
		if na.sw != "" {
			ann[annotations.SwitchPrefix+na.sw] = "true"
		}
		first := withPolicy(t, ann, na.asset, nil, published)
		if first.Desired == nil {
			t.Fatalf("%s: %s %s", na.asset, first.Verdict, first.Reason)
		}
		if dis := engine.DisruptionOf(&first); !dis.Reboot {
			t.Errorf("%s: creating it does not reboot: %s", na.asset, dis)
		}
		key := "MachineConfig//" + first.Desired.GetName()
		for _, section := range [][]string{{"storage", "files"}, {"systemd", "units"}} {
			entries, _, _ := unstructured.NestedSlice(first.Desired.Object, append([]string{"spec", "config"}, section...)...)
			for i := range entries {
				seen++
				live := first.Desired.DeepCopy()
				old, _, _ := unstructured.NestedSlice(live.Object, append([]string{"spec", "config"}, section...)...)
				e := old[i].(map[string]any)
				name, _ := e["path"].(string)
				if name == "" {
					name, _ = e["name"].(string)
				}
				e["overwrite"] = false // any difference in the entry
				_ = unstructured.SetNestedSlice(live.Object, old, append([]string{"spec", "config"}, section...)...)
				d := withPolicy(t, ann, na.asset, liveMap{key: live}, published)
				dis := engine.DisruptionOf(&d)
				unit, isDeclared := declared[name]
				switch {
				case isDeclared && (dis.Reboot || strings.Join(dis.Actions, ",") != "restart "+unit):
					t.Errorf("%s: a change of %s gives %s, want restart %s", na.asset, name, dis, unit)
				case !isDeclared && !dis.Reboot:
					t.Errorf("%s: a change of %s, which has no entry, gives %s", na.asset, name, dis)
				}
				if isDeclared {
					if _, _, staged := engine.Staging(rendercontext.New(rendercontext.Facts{HCO: hcoWith(annotations.DisruptionWindow, "Sat 02:00-03:00 UTC")}), dis, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)); staged {
						t.Errorf("%s: a change of %s is staged though it reboots nothing", na.asset, name)
					}
				}
				for what, mc := range map[string]*unstructured.Unstructured{"no MachineConfiguration": nil, "a status behind its spec": behind} {
					d := withPolicy(t, ann, na.asset, liveMap{key: live}, mc)
					if dis := engine.DisruptionOf(&d); !dis.Reboot {
						t.Errorf("%s: with %s a change of %s gives %s", na.asset, what, name, dis)
					}
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d entries judged", seen)
	}
}

func hcoWith(k, v string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAnnotations(map[string]string{k: v})
	return u
}

// An entry an admin wrote for one of the autopilot's paths is theirs: the
// render leaves it out rather than overwrite it; an equal entry is kept.
func TestNodeDisruptionPolicyYieldsToOthersEntries(t *testing.T) {
	files := declaredFiles(t)
	path := files[0].(map[string]any)["path"].(string)
	live := machineConfiguration(nil, true)
	_ = unstructured.SetNestedSlice(live.Object, []any{
		map[string]any{"path": path, "actions": []any{map[string]any{"type": "None"}}},
		map[string]any{"path": "/etc/admin", "actions": []any{map[string]any{"type": "None"}}},
	}, "spec", "nodeDisruptionPolicy", "files")
	d := evaluate(t, nil, "node-disruption-policy", liveMap{"MachineConfiguration//cluster": live})
	got, _, _ := unstructured.NestedSlice(d.Desired.Object, "spec", "nodeDisruptionPolicy", "files")
	if len(got) != len(files)-1 || strings.Contains(fmt.Sprint(got), path+" ") || strings.Contains(fmt.Sprint(got), "/etc/admin") {
		t.Fatalf("rendered %v over the admin's entry for %s", got, path)
	}
	_ = unstructured.SetNestedSlice(live.Object, files, "spec", "nodeDisruptionPolicy", "files")
	d = evaluate(t, nil, "node-disruption-policy", liveMap{"MachineConfiguration//cluster": live})
	if got, _, _ := unstructured.NestedSlice(d.Desired.Object, "spec", "nodeDisruptionPolicy", "files"); len(got) != len(files) {
		t.Fatalf("its own entries are not written again: %v", got)
	}
}

// An admin's entry for a directory above a script is theirs too (MCO
// takes the longest match, so an exact entry would shadow it); and while
// a MachineConfig of the autopilot's ships the unit disabled or masked (a
// patch), no restart entry is declared for its script: a restart would
// start the unit again, or fail and degrade the node.
func TestNodeDisruptionPolicyStandsBack(t *testing.T) {
	files := declaredFiles(t)
	render := func(live *unstructured.Unstructured, objs map[rendercontext.ObjectKey]*unstructured.Unstructured) []string {
		ev, cat, rc := setup(t, nil)
		// Every declared read was made; those not given are absent.
		rc.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
		for _, k := range rendercontext.Reads(cat) {
			rc.Objects[k] = objs[k]
		}
		a, _ := cat.Get("node-disruption-policy")
		d := ev.Evaluate(context.Background(), a, rc, liveMap{"MachineConfiguration//cluster": live})
		if d.Desired == nil {
			t.Fatalf("%s %s", d.Verdict, d.Reason)
		}
		got, _, _ := unstructured.NestedSlice(d.Desired.Object, "spec", "nodeDisruptionPolicy", "files")
		var paths []string
		for _, f := range got {
			paths = append(paths, f.(map[string]any)["path"].(string))
		}
		return paths
	}
	live := machineConfiguration(nil, true)
	_ = unstructured.SetNestedSlice(live.Object, []any{
		map[string]any{"path": "/usr/local/bin", "actions": []any{map[string]any{"type": "Drain"}}},
	}, "spec", "nodeDisruptionPolicy", "files")
	if got := render(live, nil); len(got) != 0 {
		t.Fatalf("declared %v under the admin's /usr/local/bin entry", got)
	}
	_ = unstructured.SetNestedSlice(live.Object, []any{
		map[string]any{"path": "/usr/local/binaries", "actions": []any{map[string]any{"type": "Drain"}}},
	}, "spec", "nodeDisruptionPolicy", "files")
	if got := render(live, nil); len(got) != len(files) {
		t.Fatalf("a sibling path is not a directory above the scripts: declared %v", got)
	}

	// The VM-shutdown MachineConfig as applied, then with its unit patched.
	d := withPolicy(t, map[string]string{annotations.SwitchPrefix + "enable-vm-drain-shutdown-inhibitor": "true"}, "vm-drain-shutdown-inhibitor-worker", nil, nil)
	mcKey := rendercontext.ObjectKey{GVK: d.Desired.GroupVersionKind(), Name: d.Desired.GetName()}
	for _, tc := range []struct {
		field string
		value any
		keep  bool
	}{
		{"enabled", true, true},
		{"enabled", false, false},
		{"mask", true, false},
	} {
		mc := d.Desired.DeepCopy()
		units, _, _ := unstructured.NestedSlice(mc.Object, "spec", "config", "systemd", "units")
		for _, u := range units {
			if m := u.(map[string]any); m["name"] == "kubevirt-vm-shutdown.service" {
				m[tc.field] = tc.value
			}
		}
		_ = unstructured.SetNestedSlice(mc.Object, units, "spec", "config", "systemd", "units")
		got := render(nil, map[rendercontext.ObjectKey]*unstructured.Unstructured{mcKey: mc})
		has := slices.Contains(got, "/usr/local/bin/kubevirt-vm-shutdown")
		if has != tc.keep || !slices.Contains(got, "/usr/local/bin/kubevirt-ksm-zero-only") {
			t.Errorf("unit %s=%v: declared %v", tc.field, tc.value, got)
		}
	}
}
