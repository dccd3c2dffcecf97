//go:build bench

package bench

// The autopilot as its own process, measured from outside: its endpoints,
// its CPU and memory from /proc.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// process is one autopilot process and its endpoints.
type process struct {
	cmd                     *exec.Cmd
	pid                     int
	metrics, debug, console string
	convergedAfter          time.Duration
}

func (p *process) stop() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

// startProcess starts the autopilot and waits until it converged: a
// reconcile finished from the HCO as it is (the autopilot writes the
// golden config first, then reads it back).
func (b *bench) startProcess(bin, kubeconfig string, n int) *process {
	p := &process{metrics: freeAddr(b.t), debug: freeAddr(b.t)}
	args := []string{"run", "--kubeconfig", kubeconfig, "--namespace", "openshift-cnv",
		"--metrics-bind-address", p.metrics, "--debug-bind-address", p.debug, "--health-probe-bind-address", "0",
		"--resync", "1h", "--zap-log-level", "error"}
	if b.console.dir != "" {
		p.console = freeAddr(b.t)
		args = append(args, "--console-bind-address", p.console, "--console-cert-dir", b.console.dir)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), "RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER=quay.io/kubevirt/kubevirt-metrics-exporter:bench")
	p.cmd.Stderr = os.Stderr
	t0 := time.Now()
	b.must(p.cmd.Start())
	p.pid = p.cmd.Process.Pid
	waitFor(b.t, fmt.Sprintf("converge at %d nodes", n), 5*time.Minute, func() bool {
		rv := healthRV(p.debug)
		return rv != "" && rv == b.hco().GetResourceVersion()
	})
	p.convergedAfter = time.Since(t0)
	return p
}

func freeAddr(t *testing.T) string {
	a, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// healthRV is the HCO resourceVersion the last finished reconcile started
// from ("" before one).
func healthRV(addr string) string {
	resp, err := http.Get("http://" + addr + "/debug/health?format=json")
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	var h struct {
		RV string `json:"hcoResourceVersion"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return h.RV
}

// scrapeMetrics sums the counters the scale run reads: the process's API
// requests, its node events and reconciles, and its work queue.
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		base, _, _ := strings.Cut(name, "{")
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		switch {
		case base == "go_memstats_heap_inuse_bytes":
			out["heap_inuse"] = v
		case base == "go_memstats_heap_idle_bytes":
			out["heap_idle"] = v
		case base == "go_memstats_heap_released_bytes":
			out["heap_released"] = v
		case base == "rest_client_requests_total":
			out["requests"] += v
		case base == "virt_platform_autopilot_node_events_total":
			out["node_events"] += v
		case base == "controller_runtime_reconcile_total" && strings.Contains(name, `controller="autopilot"`):
			out["reconciles"] += v
		case base == "workqueue_depth" && strings.Contains(name, `name="autopilot"`):
			out["queue_depth"] += v
		case base == "controller_runtime_active_workers" && strings.Contains(name, `controller="autopilot"`):
			out["active"] += v
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return out
}

// cpuMs is the CPU time pid's threads have run, in milliseconds
// (nanosecond schedstat, not the 10 ms ticks of /proc/<pid>/stat).
func cpuMs(pid int) float64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns float64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) > 0 {
			v, _ := strconv.ParseFloat(fields[0], 64)
			ns += v
		}
	}
	return ns / 1e6
}

// rssMiB is pid's resident set.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
