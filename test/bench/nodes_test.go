//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

// scalePoint is what the autopilot, as its own process, costs on a cluster
// of N nodes shaped like real ones (41 labels, 30 images, 5 conditions)
// with N running VMIs.
type scalePoint struct {
	Nodes int `json:"nodes"`
	// FirstConvergeMs: process start to a reconcile finished from the HCO
	// it last wrote (every asset applied, the VMIs counted for the
	// MachineConfigs' rollout impact).
	FirstConvergeMs float64 `json:"first_converge_ms"`
	// ListNodesMs: the same API server listing the N nodes to a plain
	// client, as the autopilot's node watch does first (the median of 3):
	// the part of the first converge that any reader of nodes pays.
	ListNodesMs float64 `json:"list_nodes_ms"`
	// RSSMiB after converging; then after the events below.
	RSSMiB float64 `json:"rss_mib"`
	// HeapMiB is the Go heap in use after converging, HeapFreeMiB what the
	// runtime holds free and has not returned to the system.
	HeapMiB     float64 `json:"heap_mib"`
	HeapFreeMiB float64 `json:"heap_free_mib"`
	RSSAfterMiB float64 `json:"rss_after_events_mib"`
	// LabelEventCPUMs and LabelEventRequests: per node-label event (a
	// worker's NUMA label flipped, 20 a second, its pool keeping both
	// kinds of node); ChurnCores the CPU of those 20 events a second.
	LabelEventCPUMs    float64 `json:"label_event_cpu_ms"`
	LabelEventRequests float64 `json:"label_event_requests"`
	LabelReconciles    float64 `json:"label_event_reconciles"`
	ChurnCores         float64 `json:"churn_20hz_cores"`
	// ReconcileCPUMs and ReconcileRequests: per full reconcile that finds
	// nothing to do (an HCO annotation nothing reads).
	ReconcileCPUMs    float64 `json:"reconcile_cpu_ms"`
	ReconcileRequests float64 `json:"reconcile_requests"`
	// StatusCPUMsPer1000: CPU per 1,000 node status updates (heartbeats).
	StatusCPUMsPer1000 float64 `json:"status_cpu_ms_per_1000"`
	// Burst: every node relabelled at once (an NFD restart that adds a
	// label): how long the relabelling took and the reconciles it cost.
	BurstSeconds float64 `json:"burst_seconds"`
	// ImpactCPUMs and ImpactRequests: a MachineConfig corrected, with the
	// N VMIs its rollout would migrate counted (pages of 500): the PATCH,
	// the pages and 4 Events (DriftCorrected and PoolRollout, each on the
	// object and the HCO); the RSS right after.
	ImpactCPUMs       float64 `json:"impact_cpu_ms"`
	ImpactRequests    float64 `json:"impact_requests"`
	RSSAfterImpactMiB float64 `json:"rss_after_impact_mib"`
	BurstReconciles   float64 `json:"burst_reconciles"`
	// The console API as a viewer sees it (TLS, a reviewed token): the
	// overview (100 requests) and a switch's preview (PCI passthrough
	// turned off, which reboots the worker pool): the first, which counts
	// the pool's N VMIs unless the controller counted them within the
	// minute, then 20 more, median and p99.
	ConsoleOverviewP50Ms  float64 `json:"console_overview_p50_ms"`
	ConsoleOverviewP99Ms  float64 `json:"console_overview_p99_ms"`
	ConsolePreviewFirstMs float64 `json:"console_preview_first_ms"`
	ConsolePreviewP50Ms   float64 `json:"console_preview_p50_ms"`
	ConsolePreviewP99Ms   float64 `json:"console_preview_p99_ms"`
}

// TestScale runs the cluster binary against a real API server growing to
// 500, 2,000 and 5,000 nodes; 'make bench' runs it after TestSuite and
// writes _output/bench_scale.json. CPU is the process's own (the sum of its
// threads' run time, /proc/<pid>/task/*/schedstat), requests its client's
// (rest_client_requests_total), so the suite's own clients are not counted.
func TestScale(t *testing.T) {
	vendor := os.Getenv("VENDOR_CRDS")
	if vendor == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("VENDOR_CRDS and KUBEBUILDER_ASSETS must be set: run 'make bench'")
	}
	crds, _, err := testenv.ClusterCRDs(vendor)
	if err != nil {
		t.Fatal(err)
	}
	env, cfg, _, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, ctx: context.Background(), c: c, cfg: cfg, results: map[string]float64{}}
	b.seed()
	b.touch(crds)
	b.console = newConsoleCert(b)
	token := b.consoleToken()

	dir := t.TempDir()
	bin := filepath.Join(dir, "virt-platform-autopilot-cluster")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/virt-platform-autopilot-cluster")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	b.must(testenv.WriteKubeconfig(cfg, kubeconfig))

	// A first run creates every object: each measured run below is a new
	// process on a cluster the autopilot already configured (a restart, an
	// upgrade, a failover), so the runs differ only in the cluster's size.
	b.startProcess(bin, kubeconfig, 0).stop()
	var points []scalePoint
	have := 0
	for _, n := range []int{500, 2000, 5000} {
		for ; have < n; have++ {
			b.must(c.Create(b.ctx, realNode(have)))
			b.must(c.Create(b.ctx, runningVMI(have)))
		}
		p := b.scaleAt(bin, kubeconfig, n, token)
		p.ListNodesMs = b.listNodes()
		points = append(points, p)
	}
	if err := os.MkdirAll(filepath.Join(testenv.RepoRoot(), "_output"), 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.MarshalIndent(map[string]any{"scale": points, "machine": machine()}, "", "  ")
	path := filepath.Join(testenv.RepoRoot(), "_output", "bench_scale.json")
	b.must(os.WriteFile(path, js, 0o644))
	for _, p := range points {
		js, _ := json.Marshal(p)
		fmt.Printf("%s\n", js)
	}
	fmt.Printf("wrote %s\n", path)
}

// scaleAt starts a new autopilot process on the cluster as it is and
// measures it.
func (b *bench) scaleAt(bin, kubeconfig string, n int, token string) scalePoint {
	pr := b.startProcess(bin, kubeconfig, n)
	defer pr.stop()
	pid, metricsAddr, debugAddr := pr.pid, pr.metrics, pr.debug
	p := scalePoint{Nodes: n, FirstConvergeMs: ms(pr.convergedAfter), RSSMiB: rssMiB(pr.pid)}
	b.consoleAPI(b.console, pr.console, token, &p)

	// A scrape's own cost, taken out of the windows below.
	scrape := func() map[string]float64 { return scrapeMetrics(b.t, metricsAddr) }
	mem := scrape()
	p.HeapMiB, p.HeapFreeMiB = mem["heap_inuse"]/(1<<20), (mem["heap_idle"]-mem["heap_released"])/(1<<20)
	c0 := cpuMs(pid)
	for i := 0; i < 10; i++ {
		scrape()
	}
	scrapeMs := (cpuMs(pid) - c0) / 10

	// Node-label churn: 20 events a second for 20 s, each flipping one
	// worker's NUMA label (its pool keeps NUMA and non-NUMA workers).
	const events = 400
	before := scrape()
	c0 = cpuMs(pid)
	w0 := time.Now()
	r := rand.New(rand.NewPCG(uint64(n), 29))
	tick := time.NewTicker(50 * time.Millisecond)
	for i := 0; i < events; i++ {
		<-tick.C
		k := r.IntN(n)
		numa := "false"
		if b.nodeLabel(k, numaKey) == "false" {
			numa = "true"
		}
		b.patchLabels(k, map[string]string{numaKey: numa})
	}
	tick.Stop()
	var after map[string]float64
	scrapes := 0
	waitFor(b.t, "the node events handled", time.Minute, func() bool {
		scrapes++
		after = scrape()
		return after["node_events"]-before["node_events"] >= events
	})
	cpu := cpuMs(pid) - c0 - float64(scrapes)*scrapeMs
	p.LabelEventCPUMs = cpu / events
	p.ChurnCores = cpu / 1000 / time.Since(w0).Seconds()
	p.LabelEventRequests = (after["requests"] - before["requests"]) / events
	p.LabelReconciles = after["reconciles"] - before["reconciles"]

	// Full reconciles with nothing to do.
	before = scrape()
	c0 = cpuMs(pid)
	for i := 0; i < 10; i++ {
		rv := b.poke()
		waitFor(b.t, "a reconcile at "+rv, 30*time.Second, func() bool { return healthRV(debugAddr) == rv })
	}
	p.ReconcileCPUMs = (cpuMs(pid) - c0) / 10
	after = scrape()
	p.ReconcileRequests = (after["requests"] - before["requests"]) / 10

	// A rollout's impact: another manager edits the PSI MachineConfig's
	// kernel arguments, the autopilot corrects it and counts, in pages,
	// the VMIs the rollout would migrate.
	before = scrape()
	c0 = cpuMs(pid)
	mc := b.mc(psiMC)
	b.must(unstructured.SetNestedStringSlice(mc.Object, []string{"psi=0"}, "spec", "kernelArguments"))
	b.must(b.c.Update(b.ctx, mc, client.FieldOwner("competitor")))
	waitFor(b.t, "the correction", time.Minute, func() bool { return kernelArgs(b.mc(psiMC)) != "psi=0" })
	// The count follows the write, in the same reconcile (one worker):
	// wait until no reconcile is running.
	scrapes = 0
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		// Polled every 100 ms: each scrape's cost is taken out below.
		if scrapes++; scrape()["active"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.t.Fatal("the correcting reconcile did not finish in a minute")
		}
	}
	p.ImpactCPUMs = cpuMs(pid) - c0 - float64(scrapes)*scrapeMs
	after = scrape()
	p.ImpactRequests = after["requests"] - before["requests"]
	p.RSSAfterImpactMiB = rssMiB(pid)

	// 1,000 status heartbeats.
	before = scrape()
	c0 = cpuMs(pid)
	for i := 0; i < 1000; i++ {
		b.heartbeat(i % n)
	}
	scrapes = 0
	waitFor(b.t, "the heartbeats handled", time.Minute, func() bool {
		scrapes++
		after = scrape()
		return after["node_events"]-before["node_events"] >= 1000
	})
	p.StatusCPUMsPer1000 = cpuMs(pid) - c0 - float64(scrapes)*scrapeMs

	// An NFD restart that adds a label to every node: the first node of
	// the new kind and the last of the old one change the facts.
	before = scrape()
	w0 = time.Now()
	label := fmt.Sprintf("feature.node.kubernetes.io/pci-1af4_%d.present", n)
	for k := 0; k < n; k++ {
		b.patchLabels(k, map[string]string{label: "true"})
	}
	p.BurstSeconds = time.Since(w0).Seconds()
	waitFor(b.t, "the burst handled", time.Minute, func() bool {
		after = scrape()
		return after["node_events"]-before["node_events"] >= float64(n)
	})
	// The last event's reconcile, one settle step later.
	waitFor(b.t, "the burst's last reconcile", time.Minute, func() bool {
		after = scrape()
		return after["queue_depth"] == 0 && after["active"] == 0 && healthRV(debugAddr) != "" && time.Since(w0) > time.Duration(p.BurstSeconds*float64(time.Second))+6*time.Second
	})
	p.BurstReconciles = after["reconciles"] - before["reconciles"]
	p.RSSAfterMiB = rssMiB(pid)
	return p
}

// listNodes times a plain client's list of every node, served from the API
// server's watch cache as an informer's first list is (the median of 3).
func (b *bench) listNodes() float64 {
	var ds []time.Duration
	for i := 0; i < 3; i++ {
		var l corev1.NodeList
		t0 := time.Now()
		b.must(b.c.List(b.ctx, &l, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}))
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ms(ds[1])
}
