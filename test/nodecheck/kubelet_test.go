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
		var kc json.RawMessage
		cpu := false
		for _, o := range p.Objects {
			if o.Kind == "KubeletConfig" {
				spec := o.Obj.Object["spec"]
				kc, _ = json.Marshal(spec)
				_, cpu = spec.(map[string]any)["kubeletConfig"].(map[string]any)["cpuManagerPolicy"]
			}
		}
		dropIns := map[string]string{}
		for _, f := range cfg.Storage.Files {
			if dir, name := filepath.Split(f.Path); dir == "/etc/openshift/kubelet.conf.d/" {
				data, err := fileContents(f)
				if err != nil {
					return nil, err
				}
				dropIns[name] = string(data)
			}
		}
		for _, rel := range releases {
			swap, err := swapTurnsOn(t, cfg, rel, p)
			if err != nil {
				return nil, err
			}
			for _, m := range machines {
				node := nodeModel{CPUs: m.cpus, NUMANodes: p.NUMA, MemoryBytes: m.mem, Swap: swap}
				c := kubeletCase{
					Template: rel.kubeletTemplate(p.Pool), KubeletConfig: kc, MCO: rel.mcoRules(p.Pool),
					Sizing:       sizing{Enabled: rel.nodeSizing(p.Pool), Memory: "1Gi", CPU: "500m", ES: "1Gi"},
					SizingDropIn: rel.sizingDropIn(), ConfigDir: rel.configDir(p.Pool), DropIns: dropIns, Node: node,
				}
				key, _ := json.Marshal(c)
				if i, ok := seen[string(key)]; ok {
					out[i].also = append(out[i].also, rel.name)
					continue
				}
				seen[string(key)] = len(out)
				base := c
				base.KubeletConfig, base.DropIns, base.Node.Swap = nil, nil, false
				j := judged{what: fmt.Sprintf("OCP %s pool %s on %s (NUMA %d, swap partition %t), rendered for %s", rel.name, p.Pool, m.name, p.NUMA, p.Swap, p.Cases[0]),
					hasKC: kc != nil, cpuMgr: cpu, release: rel, pool: p.Pool}
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
