package nodecheck

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// declaredRestart is one entry of the autopilot's node disruption policy:
// a change of Path restarts Unit instead of rebooting the pool.
type declaredRestart struct{ Path, Unit string }

func declaredPolicy(t *testing.T) []declaredRestart {
	t.Helper()
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := cat.Get("node-disruption-policy")
	if !ok {
		t.Fatal("no node-disruption-policy asset")
	}
	rc := rendercontext.New(rendercontext.Facts{})
	rc.AssumeAllKinds = true
	d := (&engine.Evaluator{Renderer: render.New(assets.FS)}).Evaluate(context.Background(), a, rc, nil)
	if d.Desired == nil {
		t.Fatalf("node-disruption-policy: %s %s", d.Verdict, d.Reason)
	}
	files, _, _ := unstructured.NestedSlice(d.Desired.Object, "spec", "nodeDisruptionPolicy", "files")
	var out []declaredRestart
	for _, f := range files {
		m := f.(map[string]any)
		acts := m["actions"].([]any)
		if len(acts) != 1 || acts[0].(map[string]any)["type"] != "Restart" {
			t.Fatalf("%v: only a single Restart has a proof here; add one for any other action", m)
		}
		out = append(out, declaredRestart{Path: m["path"].(string), Unit: acts[0].(map[string]any)["restart"].(map[string]any)["serviceName"].(string)})
	}
	return out
}

// unitDirectives parses a unit file's [Service] and [Unit] lines
// (key -> values, in order).
func unitDirectives(contents string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(contents, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "[") {
			out[k] = append(out[k], v)
		}
	}
	return out
}

// TestDeclaredActionsTakeEffect proves each declared entry in every pool
// configuration of the matrix: after the file changes, restarting the unit
// alone puts the new file into effect. The unit ships in the same pool
// configuration, enabled, and runs the file; a oneshot reruns it on
// restart (RemainAfterExit, one ExecStart), anything else is a
// long-running process that a restart replaces; every other unit running
// the file runs it once per boot (no Restart=), so the new file reaches it
// at its next run. The entry's own unit has no entry, so adding or
// removing the feature still reboots (pkg/engine TestNodeDisruptionOfEachShippedEntry).
func TestDeclaredActionsTakeEffect(t *testing.T) {
	declared := declaredPolicy(t)
	seen := map[string]int{}
	for _, c := range distinctConfigs(t) {
		units := map[string]t35.Unit{}
		for _, u := range c.cfg.Systemd.Units {
			units[u.Name] = u
		}
		for _, e := range declared {
			if !slices.ContainsFunc(c.cfg.Storage.Files, func(f t35.File) bool { return f.Path == e.Path }) {
				continue
			}
			seen[e.Path]++
			u, ok := units[e.Unit]
			if !ok || u.Contents == nil || u.Enabled == nil || !*u.Enabled || (u.Mask != nil && *u.Mask) {
				t.Errorf("pool %s: %s changes restart %s, which this configuration does not ship enabled", c.pool.Pool, e.Path, e.Unit)
				continue
			}
			dir := unitDirectives(*u.Contents)
			starts := dir["ExecStart"]
			if len(starts) != 1 || !slices.Contains(strings.Fields(starts[0]), e.Path) {
				t.Errorf("pool %s: %s does not run %s (ExecStart %q)", c.pool.Pool, e.Unit, e.Path, starts)
			}
			switch typ := strings.Join(dir["Type"], ""); typ {
			case "oneshot":
				if strings.Join(dir["RemainAfterExit"], "") != "yes" {
					t.Errorf("pool %s: oneshot %s without RemainAfterExit=yes", c.pool.Pool, e.Unit)
				}
			case "", "simple", "exec":
			default:
				t.Errorf("pool %s: %s is Type=%s, for which this test has no proof", c.pool.Pool, e.Unit, typ)
			}
			for name, other := range units {
				if name == e.Unit || other.Contents == nil || !strings.Contains(*other.Contents, e.Path) {
					continue
				}
				if r := strings.Join(unitDirectives(*other.Contents)["Restart"], ""); r != "" && r != "no" {
					t.Errorf("pool %s: %s also runs %s and is restarted by systemd (Restart=%s): the new file would reach it unannounced", c.pool.Pool, name, e.Path, r)
				}
			}
		}
	}
	for _, e := range declared {
		if seen[e.Path] == 0 {
			t.Errorf("%s: declared, but no configuration of the matrix ships it", e.Path)
		}
	}
}

// sysfsScripts are the declared oneshot scripts that set kernel knobs,
// with the directory they write and, per kernel they must handle, the knobs
// present and those the kernel itself keeps changing. A restart reruns only
// the new script, so every other knob present must be written on every
// run: a knob an older version wrote and the new one leaves alone would
// keep the old value until a reboot (so dropping one needs its unit
// changed too, which reboots).
var sysfsScripts = map[string]struct {
	dir   string
	trees []sysfsTree
}{
	"/usr/local/bin/kubevirt-ksm-zero-only": {
		dir: "/sys/kernel/mm/ksm",
		trees: []sysfsTree{
			// The scan-time advisor (Linux 6.9+) sets pages_to_scan itself.
			{present: []string{"run", "use_zero_pages", "redhat_only_zero_pages", "advisor_mode", "advisor_target_scan_time", "advisor_max_cpu", "sleep_millisecs", "pages_to_scan"}, kernelOwned: []string{"pages_to_scan"}},
			{present: []string{"run", "use_zero_pages", "redhat_only_zero_pages", "sleep_millisecs", "pages_to_scan"}},
		},
	},
}

type sysfsTree struct{ present, kernelOwned []string }

// TestDeclaredScriptsSetEveryKnob runs each declared sysfs script on a
// fake sysfs, from generated prior states (what an older script or an
// admin left): the knobs end the same whatever the state before, so a
// restart alone gives what a reboot would: every knob present that the
// kernel does not set itself is written.
func TestDeclaredScriptsSetEveryKnob(t *testing.T) {
	bash := needTool(t, "bash", "apt-get install bash")
	scripts := map[string][]byte{}
	for _, c := range distinctConfigs(t) {
		for _, f := range c.cfg.Storage.Files {
			if _, ok := sysfsScripts[f.Path]; ok {
				data, err := fileContents(f)
				if err != nil {
					t.Fatal(err)
				}
				scripts[f.Path] = data
			}
		}
	}
	for _, e := range declaredPolicy(t) {
		if strings.Contains(e.Unit, "vm-shutdown") {
			continue // a long-running process, proven by TestDeclaredActionsTakeEffect
		}
		if _, ok := sysfsScripts[e.Path]; !ok {
			t.Errorf("%s is declared with no proof that restarting %s applies it: add it to sysfsScripts", e.Path, e.Unit)
		}
	}
	rng := rand.New(rand.NewSource(3))
	for path, spec := range sysfsScripts {
		script, ok := scripts[path]
		if !ok {
			t.Errorf("%s: not in any rendered configuration", path)
			continue
		}
		for ti, tree := range spec.trees {
			var first map[string]string
			for run := 0; run < 4; run++ {
				dir := t.TempDir()
				for _, k := range tree.present {
					prior := fmt.Sprintf("prior-%d", rng.Intn(1000))
					if err := os.WriteFile(filepath.Join(dir, k), []byte(prior+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				body := strings.ReplaceAll(string(script), spec.dir, dir)
				if body == string(script) {
					t.Fatalf("%s does not name %s", path, spec.dir)
				}
				out, err := exec.Command(bash, "-c", body).CombinedOutput()
				if err != nil {
					t.Fatalf("%s (tree %d): %v\n%s", path, ti, err, out)
				}
				got := map[string]string{}
				for _, k := range tree.present {
					if slices.Contains(tree.kernelOwned, k) {
						continue
					}
					b, _ := os.ReadFile(filepath.Join(dir, k))
					got[k] = strings.TrimSpace(string(b))
					if strings.HasPrefix(got[k], "prior-") {
						t.Errorf("%s (tree %d): %s keeps the value it had before (%s)", path, ti, k, got[k])
					}
				}
				if first == nil {
					first = got
				} else if !maps.Equal(first, got) {
					t.Errorf("%s (tree %d): the result depends on the state before: %v vs %v", path, ti, first, got)
				}
			}
		}
	}
}
