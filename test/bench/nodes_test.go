//go:build bench

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
		p := b.scaleAt(bin, kubeconfig, n)
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

// process is one autopilot process and its endpoints.
type process struct {
	cmd            *exec.Cmd
	pid            int
	metrics, debug string
	convergedAfter time.Duration
}

func (p *process) stop() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

// startProcess starts the autopilot and waits until it converged: a
// reconcile finished from the HCO as it is (the autopilot writes the
// golden config first, then reads it back).
func (b *bench) startProcess(bin, kubeconfig string, n int) *process {
	p := &process{metrics: freeAddr(b.t), debug: freeAddr(b.t)}
	p.cmd = exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--namespace", "openshift-cnv",
		"--metrics-bind-address", p.metrics, "--debug-bind-address", p.debug, "--health-probe-bind-address", "0",
		"--resync", "1h", "--zap-log-level", "error")
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

// scaleAt starts a new autopilot process on the cluster as it is and
// measures it.
func (b *bench) scaleAt(bin, kubeconfig string, n int) scalePoint {
	pr := b.startProcess(bin, kubeconfig, n)
	defer pr.stop()
	pid, metricsAddr, debugAddr := pr.pid, pr.metrics, pr.debug
	p := scalePoint{Nodes: n, FirstConvergeMs: ms(pr.convergedAfter), RSSMiB: rssMiB(pr.pid)}

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

const numaKey = "feature.node.kubernetes.io/memory-numa"

func nodeName(i int) string { return fmt.Sprintf("scale-node-%05d", i) }

// realNode is a worker as NFD and the kubelet leave it: 41 labels (of
// which the autopilot reads a few), 30 images, 5 conditions.
func realNode(i int) *corev1.Node {
	l := map[string]string{
		"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": nodeName(i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "node.openshift.io/os_id": "rhcos",
		"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3), "topology.kubernetes.io/region": "region-1",
		"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel", "feature.node.kubernetes.io/cpu-model.family": "6",
		"feature.node.kubernetes.io/cpu-model.id": "143", "feature.node.kubernetes.io/kernel-version.major": "5",
		"feature.node.kubernetes.io/iommu-enabled": "true", "feature.node.kubernetes.io/pci-0300_1a03.present": "true",
		"feature.node.kubernetes.io/system-os_release.ID": "rhcos", numaKey: []string{"true", "false"}[i%2],
	}
	for _, f := range []string{"AVX", "AVX2", "AVX512F", "AESNI", "FMA3", "SHA", "VMX", "X87", "ADX", "BMI1", "BMI2", "CMPXCHG8",
		"F16C", "FXSR", "MOVBE", "OSXSAVE", "POPCNT", "RDRAND", "RDSEED", "SSE4", "SSE42", "SSSE3", "XSAVE", "LAHF"} {
		l["feature.node.kubernetes.io/cpu-cpuid."+f] = "true"
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: l}}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("250")}
	n.Status.Allocatable = n.Status.Capacity
	for k := 0; k < 30; k++ {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:%064d", k), fmt.Sprintf("quay.io/openshift/image-%d:4.21", k)},
			SizeBytes: int64(300+k) << 20})
	}
	now := metav1.Now()
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady, "NetworkUnavailable"} {
		st := corev1.ConditionFalse
		if c == corev1.NodeReady {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: st, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady", Message: "kubelet is posting ready status"})
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.34.1", ContainerRuntimeVersion: "cri-o://1.34.1", KernelVersion: "5.14.0-570.el9_6.x86_64", OSImage: "Red Hat Enterprise Linux CoreOS 9.6", OperatingSystem: "linux", Architecture: "amd64"}
	return n
}

// runningVMI is a VM running on node i, live-migratable.
func runningVMI(i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}, "memory": map[string]any{"guest": "4Gi"}}},
		"status": map[string]any{"phase": "Running", "nodeName": nodeName(i),
			"conditions": []any{map[string]any{"type": "LiveMigratable", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}}},
	}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"})
	u.SetNamespace("default")
	u.SetName(fmt.Sprintf("vm-%05d", i))
	return u
}

func (b *bench) nodeLabel(i int, key string) string {
	n := &corev1.Node{}
	b.must(b.c.Get(b.ctx, client.ObjectKey{Name: nodeName(i)}, n))
	return n.Labels[key]
}

func (b *bench) patchLabels(i int, labels map[string]string) {
	js, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	b.must(b.c.Patch(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}, client.RawPatch(types.MergePatchType, js)))
}

// heartbeat is the kubelet's status update: the Ready condition's time.
func (b *bench) heartbeat(i int) {
	js, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "lastHeartbeatTime": time.Now().UTC().Format(time.RFC3339Nano)}}}})
	b.must(b.c.Status().Patch(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}, client.RawPatch(types.StrategicMergePatchType, js)))
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
