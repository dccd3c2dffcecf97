package nodecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
)

// The kubelet's own checks run in hack/kubelet-check, a separate module
// linking k8s.io/kubernetes (v1.36, the kubelet of OCP 5.0; the module
// proxy serves no kubelet as old as 4.16's 1.29, so older releases are
// judged by 1.36's rules over their own MCO templates and MCO rules: the
// kubelet's configuration checks only grew stricter since). One process
// judges every case of the matrix, one JSON line each.

// kubeletCase is hack/kubelet-check's Case (main.go there).
type kubeletCase struct {
	ID            string            `json:"id"`
	Template      string            `json:"template"`
	KubeletConfig json.RawMessage   `json:"kubeletConfig,omitempty"`
	MCO           mcoRules          `json:"mco"`
	Sizing        sizing            `json:"sizing"`
	SizingDropIn  bool              `json:"sizingDropIn"`
	ConfigDir     bool              `json:"configDir"`
	DropIns       map[string]string `json:"dropIns,omitempty"`
	Node          nodeModel         `json:"node"`
}

type sizing struct {
	Enabled bool   `json:"enabled"`
	Memory  string `json:"memory"`
	CPU     string `json:"cpu"`
	ES      string `json:"ephemeralStorage"`
}

type nodeModel struct {
	CPUs        int   `json:"cpus"`
	NUMANodes   int   `json:"numaNodes"`
	MemoryBytes int64 `json:"memoryBytes"`
	Swap        bool  `json:"swap"`
}

type kubeletResult struct {
	ID        string          `json:"id"`
	Errors    []string        `json:"errors"`
	Warnings  []string        `json:"warnings"`
	Effective json.RawMessage `json:"effective"`
}

// machines are the node sizes every pool is judged on: a small host and a
// large one (auto-sized system-reserved grows with memory and CPUs).
var machines = []struct {
	name string
	cpus int
	mem  int64
}{
	{"8cpu-16Gi", 8, 16 << 30},
	{"128cpu-512Gi", 128, 512 << 30},
}

// judged pairs each case with its baseline: the same node and release
// without anything of ours (no KubeletConfig, no drop-in, no swap unit).
type judged struct {
	what     string // release, pool, machine and a cell, for messages
	ours     kubeletResult
	baseline kubeletResult
	hasKC    bool
	cpuMgr   bool // our KubeletConfig sets the static CPU manager
	release  release
	pool     string
	// admin is the admin's KubeletConfig in both runs, or nil.
	admin *adminKC
	// also are the later releases whose case is the same as release's.
	also []string
}

var (
	kubeletOnce sync.Once
	kubeletOut  []judged
	kubeletErr  error
)

// judgeKubelets builds every case of the matrix and runs the tool once.
func judgeKubelets(t *testing.T) []judged {
	t.Helper()
	bin := kubeletCheck(t)
	r := renderAll(t)
	kubeletOnce.Do(func() { kubeletOut, kubeletErr = runKubeletCheck(t, bin, r) })
	if kubeletErr != nil {
		t.Fatal(kubeletErr)
	}
	return kubeletOut
}

func runKubeletCheck(t *testing.T, bin string, r *rendered) ([]judged, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	var out []judged
	seen := map[string]int{}
	for _, p := range r.Pools {
		cfg, errs := mergedConfig(p)
		if len(errs) > 0 {
			continue // TestPoolRender reports it
		}
		var kc, adminSpec json.RawMessage
		cpu := false
		for _, o := range p.Objects {
			if o.Kind == "KubeletConfig" {
				spec := o.Obj.Object["spec"]
				kc, _ = json.Marshal(spec)
				_, cpu = spec.(map[string]any)["kubeletConfig"].(map[string]any)["cpuManagerPolicy"]
			}
		}
		if p.Admin != nil {
			if kc != nil {
				return nil, fmt.Errorf("pool %s rendered for %s: a KubeletConfig of ours beside the admin's %s (MCO would let one replace the other)", p.Pool, p.Cases[0], p.Admin.name)
			}
			// MCO merges the admin's KubeletConfig into kubelet.conf.
			adminSpec, _ = json.Marshal(p.Admin.spec)
		}
		dropIns := map[string]string{}
		var ourSizing *sizing
		for _, f := range cfg.Storage.Files {
			data, err := fileContents(f)
			if err != nil {
				return nil, err
			}
			if dir, name := filepath.Split(f.Path); dir == "/etc/openshift/kubelet.conf.d/" {
				dropIns[name] = string(data)
				cpu = cpu || parseFlat(data)["cpuManagerPolicy"]
			}
			if f.Path == "/etc/node-sizing-enabled.env" {
				// Ours, over MCO's template file (merge order by name).
				env := parseEnvFile(data)
				ourSizing = &sizing{Enabled: env["NODE_SIZING_ENABLED"] == "true", Memory: env["SYSTEM_RESERVED_MEMORY"], CPU: env["SYSTEM_RESERVED_CPU"], ES: env["SYSTEM_RESERVED_ES"]}
			}
		}
		for _, rel := range releases {
			if !sameEra(rel, p.Era) {
				continue // its kubelet units would render another form
			}
			swap, err := swapTurnsOn(t, cfg, rel, p)
			if err != nil {
				return nil, err
			}
			for _, m := range machines {
				node := nodeModel{CPUs: m.cpus, NUMANodes: p.NUMA, MemoryBytes: m.mem, Swap: swap}
				template := sizing{Enabled: rel.nodeSizing(p.Pool), Memory: "1Gi", CPU: "500m", ES: "1Gi"}
				c := kubeletCase{
					Template: rel.kubeletTemplate(p.Pool), KubeletConfig: kc, MCO: rel.mcoRules(p.Pool),
					Sizing:       template,
					SizingDropIn: rel.sizingDropIn(), ConfigDir: rel.configDir(p.Pool), DropIns: dropIns, Node: node,
				}
				if ourSizing != nil {
					c.Sizing = *ourSizing
				}
				if adminSpec != nil {
					c.KubeletConfig = adminSpec
				}
				key, _ := json.Marshal(c)
				if i, ok := seen[string(key)]; ok {
					out[i].also = append(out[i].also, rel.name)
					continue
				}
				seen[string(key)] = len(out)
				// The baseline: MCO alone, with the admin's KubeletConfig.
				base := c
				base.KubeletConfig, base.DropIns, base.Node.Swap, base.Sizing = adminSpec, nil, false, template
				j := judged{what: fmt.Sprintf("OCP %s pool %s on %s (NUMA %d, swap partition %t), rendered for %s", rel.name, p.Pool, m.name, p.NUMA, p.Swap, p.Cases[0]),
					hasKC: kc != nil, cpuMgr: cpu, release: rel, pool: p.Pool, admin: p.Admin}
				c.ID, base.ID = fmt.Sprintf("%d-ours", len(out)), fmt.Sprintf("%d-base", len(out))
				if err := enc.Encode(c); err != nil {
					return nil, err
				}
				if err := enc.Encode(base); err != nil {
					return nil, err
				}
				out = append(out, j)
			}
		}
	}
	got, err := runToolErr(bin, in.String())
	if err != nil {
		return nil, err
	}
	for i := range out {
		var ok1, ok2 bool
		out[i].ours, ok1 = got[fmt.Sprintf("%d-ours", i)]
		out[i].baseline, ok2 = got[fmt.Sprintf("%d-base", i)]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("kubelet-check answered %d of %d cases", len(got), 2*len(out))
		}
	}
	return out, nil
}

// runToolErr runs kubelet-check once over input (JSON lines) and returns
// its results by case id.
func runToolErr(bin, input string) (map[string]kubeletResult, error) {
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubelet-check: %w: %s", err, tail(stderr.String()))
	}
	got := map[string]kubeletResult{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var res kubeletResult
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, err
		}
		got[res.ID] = res
	}
	return got, sc.Err()
}

func runTool(t *testing.T, bin, input string) map[string]kubeletResult {
	t.Helper()
	got, err := runToolErr(bin, input)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// swapTurnsOn says whether the pool's nodes run with swap on under rel: a
// unit of ours runs swapon, the node has the partition it names, and the
// unit's conditions hold on that release's node. ExecCondition= commands
// really run, against a node root of the release (noderoot_test.go), with
// absolute paths under /etc read inside it.
func swapTurnsOn(t *testing.T, cfg t35.Config, rel release, p *poolSet) (bool, error) {
	if !p.Swap {
		return false, nil
	}
	for _, u := range cfg.Systemd.Units {
		if u.Contents == nil || !strings.Contains(*u.Contents, "swapon") {
			continue
		}
		if u.Enabled == nil || !*u.Enabled {
			continue
		}
		root, err := os.MkdirTemp(t.TempDir(), "node")
		if err != nil {
			return false, err
		}
		if _, err := writeNodeRoot(root, cfg, rel, p.Pool); err != nil {
			return false, err
		}
		for _, l := range strings.Split(*u.Contents, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
			switch {
			case k == "ConditionPathExists" && strings.HasPrefix(v, "/dev/disk/by-partlabel/"):
				// The partition: p.Swap says the node has it.
			case k == "ExecCondition":
				args := strings.Fields(strings.TrimLeft(v, "-@:+!"))
				for i, a := range args[1:] {
					if strings.HasPrefix(a, "/etc/") {
						args[i+1] = filepath.Join(root, a)
					}
				}
				if err := exec.Command(args[0], args[1:]...).Run(); err != nil {
					var exit *exec.ExitError
					if !errors.As(err, &exit) {
						return false, fmt.Errorf("%s ExecCondition: %w", u.Name, err)
					}
					return false, nil // condition failed: the unit is skipped
				}
			case strings.HasPrefix(k, "Condition") || strings.HasPrefix(k, "Assert"):
				return false, fmt.Errorf("%s: %s= is not modelled here: add it to swapTurnsOn", u.Name, k)
			}
		}
		return true, nil
	}
	return false, nil
}

// TestKubelet: with our KubeletConfig and drop-ins, MCO accepts the pool's
// kubelet configuration and the kubelet starts on every release, pool and
// machine of the matrix; the baselines (MCO alone) start too, which checks
// the model itself.
func TestKubelet(t *testing.T) {
	js := judgeKubelets(t)
	if len(js) == 0 {
		t.Fatal("no kubelet case: the matrix lost them")
	}
	for _, j := range js {
		if len(j.also) > 0 {
			j.what += " (the same on OCP " + strings.Join(j.also, ", ") + ")"
		}
		for _, e := range j.baseline.Errors {
			t.Errorf("baseline %s: the model is wrong: %s", j.what, e)
		}
		for _, e := range j.ours.Errors {
			t.Errorf("%s: %s", j.what, e)
		}
		for _, w := range j.ours.Warnings {
			t.Errorf("%s: warning: %s", j.what, w)
		}
	}
}

// parseEnvFile reads KEY=VALUE lines, as the sizing script sources them.
func parseEnvFile(data []byte) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			out[k] = v
		}
	}
	return out
}

// parseFlat reads a drop-in's top-level keys (a YAML map, one per line).
func parseFlat(data []byte) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && k != "" && !strings.HasPrefix(k, " ") && !strings.HasPrefix(k, "-") {
			out[k] = true
		}
	}
	return out
}

// TestAdminKubeletSettingsStay: where an admin's KubeletConfig holds the
// worker pool, every setting it makes is in effect on the node exactly as
// without the autopilot (the drop-in leaves them out), on every release
// and machine; before the drop-in folder the autopilot ships no kubelet
// setting there at all (Conflict), and from it the drop-in does ship its
// other settings.
func TestAdminKubeletSettingsStay(t *testing.T) {
	js := judgeKubelets(t)
	seen, tuned := 0, 0
	for _, j := range js {
		if j.admin == nil || len(j.ours.Errors) > 0 || len(j.baseline.Errors) > 0 {
			continue // TestKubelet reports errors
		}
		seen++
		var o, b map[string]any
		if err := json.Unmarshal(j.ours.Effective, &o); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(j.baseline.Effective, &b); err != nil {
			t.Fatal(err)
		}
		fields, _ := j.admin.spec["kubeletConfig"].(map[string]any)
		for f := range fields {
			if fmt.Sprint(o[f]) != fmt.Sprint(b[f]) {
				t.Errorf("%s: the admin's %s is %v on the node with the autopilot, %v without", j.what, f, o[f], b[f])
			}
		}
		if _, ok := j.admin.spec["autoSizingReserved"]; ok && fmt.Sprint(o["systemReserved"]) != fmt.Sprint(b["systemReserved"]) {
			t.Errorf("%s: the admin's auto-sized systemReserved is %v with the autopilot, %v without", j.what, o["systemReserved"], b["systemReserved"])
		}
		if fmt.Sprint(o["nodeStatusMaxImages"]) != fmt.Sprint(b["nodeStatusMaxImages"]) {
			tuned++ // a setting of ours the admin does not make took effect
		}
	}
	if seen == 0 {
		t.Fatal("no case with an admin's KubeletConfig: the matrix lost them")
	}
	if tuned == 0 {
		t.Fatal("with an admin's KubeletConfig the autopilot's kubelet settings never took effect: the drop-in is missing")
	}
}
