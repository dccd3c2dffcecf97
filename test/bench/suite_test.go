//go:build bench

// Package bench measures the cost model against a real control plane (the
// vendors' CRDs, the real manager in process, every API request counted)
// and writes _output/bench.json; 'make bench' runs it. Timings live here,
// never in the test suites.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/controller"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/test/testenv"
)

const psiMC = "99-worker-kubevirt-psi-karg"

// assetCount is the number of assets in the catalog.
var assetCount = func() int {
	cat, _, err := app.LoadEmbedded()
	if err != nil {
		panic(err)
	}
	return len(cat.Assets)
}()

// request is one API request of the manager, with when it was sent.
type request struct {
	at     time.Time
	method string
	path   string
	dryRun bool
}

// requestLog counts the manager's requests, but watches, leases and events
// (a watch is one stream per kind; events are sent asynchronously).
type requestLog struct {
	mu   sync.Mutex
	reqs []request
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if os.Getenv("BENCH_DEBUG") != "" && req.URL.Query().Get("watch") == "true" {
			t0 := time.Now()
			resp, err := rt.RoundTrip(req)
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			fmt.Printf("%s WATCH %s %s -> %d after %s\n", t0.Format("15:04:05.000"), req.URL.Path, req.URL.RawQuery, code, time.Since(t0).Round(time.Millisecond))
			return resp, err
		}
		if req.URL.Query().Get("watch") != "true" && !strings.Contains(req.URL.Path, "/leases") && !strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
			l.mu.Lock()
			l.reqs = append(l.reqs, request{time.Now(), req.Method, req.URL.Path, req.URL.Query().Get("dryRun") != ""})
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (l *requestLog) mark() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.reqs) }

func (l *requestLog) since(m int) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.reqs[m:]...)
}

// writes counts requests that change something (a dry-run does not).
func writes(rs []request) (n int) {
	for _, r := range rs {
		if r.method != http.MethodGet && !r.dryRun {
			n++
		}
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// waitFor polls cond every 5ms until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: no result in %s", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// manager is one in-process autopilot.
type manager struct {
	rec    *controller.Reconciler
	cache  cache.Cache
	log    *requestLog
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, cfg *rest.Config, th throttle.Config) *manager {
	return startWith(t, cfg, app.Config{Throttle: th})
}

func startWith(t *testing.T, cfg *rest.Config, c app.Config) *manager {
	m := &manager{log: &requestLog{}, done: make(chan struct{})}
	mcfg := rest.CopyConfig(cfg)
	mcfg.QPS, mcfg.Burst = 200, 400
	mcfg.WrapTransport = m.log.wrap
	c.Namespace, c.Resync = "openshift-cnv", time.Hour
	c.MetricsBindAddress, c.ProbeBindAddress, c.DebugBindAddress = "0", "0", "0"
	mgr, rec, err := app.NewManager(mcfg, c)
	if err != nil {
		t.Fatal(err)
	}
	m.rec, m.cache = rec, mgr.GetCache()
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { defer close(m.done); _ = mgr.Start(ctx) }()
	return m
}

func (m *manager) stop() { m.cancel(); <-m.done }

// converged: every asset decided, none failed or pending, and each included
// one applied or found in sync.
func (m *manager) converged() bool {
	st := m.rec.Snapshot().Assets
	if len(st) < assetCount || m.rec.Snapshot().Health.HCOResourceVersion == "" {
		return false
	}
	for _, s := range st {
		switch s.Outcome {
		case engine.Failed, engine.Throttled:
			return false
		}
	}
	return true
}

// reconciledAt waits until a whole reconcile ran from HCO resourceVersion rv.
func (m *manager) reconciledAt(t *testing.T, rv string) {
	waitFor(t, "a reconcile at "+rv, 30*time.Second, func() bool { return m.rec.Snapshot().Health.HCOResourceVersion == rv })
}

type bench struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	cfg *rest.Config

	results map[string]float64
	// console, when set, is the console server's certificate: the
	// processes started serve the console API.
	console consoleCert
	repairs []time.Duration
	nodes   []point
	assets  []point
}

func TestSuite(t *testing.T) {
	vendor := os.Getenv("VENDOR_CRDS")
	if vendor == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("VENDOR_CRDS and KUBEBUILDER_ASSETS must be set: run 'make bench'")
	}
	ctrl.SetLogger(discard())
	results := map[string]float64{}
	// The offline render first, on an otherwise idle machine: no API
	// server beside it, nothing loaded in this process yet.
	(&bench{t: t, results: results}).render()
	(&bench{t: t, results: results}).pluginSize()
	crds, _, err := testenv.ClusterCRDs(vendor)
	if err != nil {
		t.Fatal(err)
	}
	{
		// The autopilot as the first client of every CRD (a fresh envtest):
		// each first watch is answered 429 and backed off.
		env, cfg, c, err := testenv.Start(crds)
		if err != nil {
			t.Fatal(err)
		}
		first := &bench{t: t, ctx: context.Background(), c: c, cfg: cfg, results: map[string]float64{}}
		first.seed()
		first.coldStart().stop()
		results["cold_converge_first_client_ms"] = first.results["cold_converge_ms"]
		_ = env.Stop()
	}
	env, cfg, c, err := testenv.Start(crds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	b := &bench{t: t, ctx: context.Background(), c: c, cfg: cfg, results: results}
	b.seed()
	b.touch(crds)

	m := b.coldStart()
	b.steadyState(m)
	b.steadyStateWindowed(m)
	b.driftRepair(m)
	b.heap(m)
	b.nodes = b.scaleNodes(m)
	m.stop()
	b.scriptedDay()
	b.assets = b.scaleAssets()
	b.thrash()
	b.report()
}

// seed creates what a fresh cluster has: the namespaces of the operators
// behind the assets, three NFD-labelled workers, and an HCO with every
// switch and the CPUManager gate on.
func (b *bench) seed() {
	nss, err := testenv.AssetNamespaces("openshift-cnv")
	if err != nil {
		b.t.Fatal(err)
	}
	for _, ns := range nss {
		b.must(b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	for i := 0; i < 3; i++ {
		b.must(b.c.Create(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("worker-%d", i), Labels: map[string]string{
			"node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
			"feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/iommu-enabled": "true",
			"feature.node.kubernetes.io/memory-numa": "true", "feature.node.kubernetes.io/usb-ef_0b95.present": "true"}}}))
	}
	hco := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"featureGates": []any{map[string]any{"name": "CPUManager"}}}}}
	hco.SetGroupVersionKind(rendercontext.HCOGVK)
	hco.SetNamespace("openshift-cnv")
	hco.SetName(rendercontext.HCOName)
	// Every switch of the catalog on (the exporter with its image set).
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Setenv("RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER", "quay.io/kubevirt/kubevirt-metrics-exporter:bench")
	ann := map[string]string{}
	for _, f := range cat.Features {
		if f.Switch != "" {
			ann[f.SwitchAnnotation()] = "true"
		}
	}
	hco.SetAnnotations(ann)
	b.must(b.c.Create(b.ctx, hco))
}

// touch lists every CRD's resources once, as the operators behind them do on
// a running cluster: kube-apiserver builds a custom resource's watch cache
// on the first request and answers a watch before that with 429, which a
// fresh envtest would charge to the autopilot's cold start (a second of
// client back-off) although no real cluster has it.
func (b *bench) touch(crds []*apiextensionsv1.CustomResourceDefinition) {
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(crd.Spec.Group + "/" + v.Name)
			list.SetKind(crd.Spec.Names.ListKind)
			if list.GetKind() == "" {
				list.SetKind(crd.Spec.Names.Kind + "List")
			}
			_ = b.c.List(b.ctx, list, client.Limit(1))
		}
	}
}

func (b *bench) must(err error) {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
}

// coldStart: from the manager's creation to every asset decided, with
// every active asset applied, on a cluster whose CRDs already exist.
func (b *bench) coldStart() *manager {
	t0 := time.Now()
	m := start(b.t, b.cfg, throttle.Config{Burst: 100000, Refill: time.Millisecond})
	waitFor(b.t, "cold converge", 60*time.Second, m.converged)
	b.results["cold_converge_ms"] = ms(time.Since(t0))
	b.results["cold_converge_writes"] = float64(writes(m.log.since(0)))
	if os.Getenv("BENCH_DEBUG") != "" {
		for _, s := range m.rec.Snapshot().Assets {
			fmt.Printf("%-28s %-18s %s\n", s.Asset, s.Outcome, s.Reason)
		}
		for _, r := range m.log.since(0) {
			fmt.Printf("%s %6.0fms %s %s dryRun=%v\n", r.at.Format("15:04:05.000"), ms(r.at.Sub(t0)), r.method, r.path, r.dryRun)
		}
		b.t.FailNow()
	}
	return m
}

func (b *bench) hco() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rendercontext.HCOGVK)
	b.must(b.c.Get(b.ctx, client.ObjectKey{Namespace: "openshift-cnv", Name: rendercontext.HCOName}, u))
	return u
}

// poke changes an HCO annotation nothing reads: a full reconcile that
// should find nothing to do.
func (b *bench) poke() string {
	u := b.hco()
	a := u.GetAnnotations()
	a["bench/poke"] += "x"
	u.SetAnnotations(a)
	b.must(b.c.Update(b.ctx, u))
	return u.GetResourceVersion()
}

func (b *bench) steadyState(m *manager) {
	m.reconciledAt(b.t, b.poke()) // settle
	mark := m.log.mark()
	for i := 0; i < 10; i++ {
		m.reconciledAt(b.t, b.poke())
	}
	rs := m.log.since(mark)
	b.results["steady_state_requests"] = float64(len(rs)) / 10
	b.results["steady_state_writes"] = float64(writes(rs)) / 10
}

// steadyStateWindowed: with a closed disruption window on the HCO, a
// reconcile with nothing to do still costs no request, nor does one while
// a correction that reboots a pool is staged behind it; opening the
// window (removing it) sends the correction.
func (b *bench) steadyStateWindowed(m *manager) {
	opens := time.Now().UTC().Add(2 * time.Hour)
	m.reconciledAt(b.t, b.setWindow(fmt.Sprintf("daily %s-%s UTC", opens.Format("15:04"), opens.Add(time.Hour).Format("15:04"))))
	measure := func() float64 {
		m.reconciledAt(b.t, b.poke())
		mark := m.log.mark()
		for i := 0; i < 10; i++ {
			m.reconciledAt(b.t, b.poke())
		}
		return float64(len(m.log.since(mark))) / 10
	}
	b.results["steady_state_requests_window"] = measure()
	u := b.mc(psiMC)
	b.must(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments"))
	b.must(b.c.Update(b.ctx, u, client.FieldOwner("kubectl-edit")))
	waitFor(b.t, "the correction staged", 10*time.Second, func() bool {
		s, ok := m.rec.Snapshot().Asset("psi-enable")
		return ok && s.Outcome == engine.Staged
	})
	b.results["steady_state_requests_staged"] = measure()
	if kernelArgs(b.mc(psiMC)) != "psi=0" {
		b.t.Fatal("a staged correction was sent outside the window")
	}
	m.reconciledAt(b.t, b.setWindow(""))
	waitFor(b.t, "psi=1 again", 10*time.Second, func() bool { return kernelArgs(b.mc(psiMC)) == "psi=1" })
	m.reconciledAt(b.t, b.poke())
}

func (b *bench) mc(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfig")
	b.must(b.c.Get(b.ctx, client.ObjectKey{Name: name}, u))
	return u
}

func kernelArgs(u *unstructured.Unstructured) string {
	a, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "kernelArguments")
	return strings.Join(a, ",")
}

// driftRepair: another manager changes a field the autopilot owns; the
// time from that edit to the corrective write, and the requests it costs.
func (b *bench) driftRepair(m *manager) {
	const edits = 200
	var reqs int
	for i := 0; i < edits; i++ {
		u := b.mc(psiMC)
		b.must(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments"))
		mark := m.log.mark()
		edited := time.Now()
		b.must(b.c.Update(b.ctx, u, client.FieldOwner("kubectl-edit")))
		var fixed time.Time
		waitFor(b.t, "the corrective write", 10*time.Second, func() bool {
			for _, r := range m.log.since(mark) {
				if r.method != http.MethodGet && !r.dryRun && strings.HasSuffix(r.path, "/"+psiMC) {
					fixed = r.at
					return true
				}
			}
			return false
		})
		waitFor(b.t, "psi=1 again", 10*time.Second, func() bool { return kernelArgs(b.mc(psiMC)) == "psi=1" })
		m.reconciledAt(b.t, b.poke()) // the write's own watch event settles
		b.repairs = append(b.repairs, fixed.Sub(edited))
		reqs += len(m.log.since(mark))
	}
	sort.Slice(b.repairs, func(i, j int) bool { return b.repairs[i] < b.repairs[j] })
	b.results["drift_repair_p50_ms"] = ms(b.repairs[len(b.repairs)/2])
	b.results["drift_repair_p99_ms"] = ms(b.repairs[len(b.repairs)*99/100])
	b.results["drift_repair_requests"] = float64(reqs) / edits
}

// heap after GC, converged, then with 500 nodes of 40 NFD labels, 100
// unrelated CRDs and 5,000 unrelated ConfigMaps added.
func (b *bench) heap(m *manager) {
	b.results["heap_empty_mib"] = m.liveHeapMiB(b)
	writeHeapProfile(b.t, "empty")
	for i := 0; i < 500; i++ {
		labels := map[string]string{"node-role.kubernetes.io/worker": ""}
		for j := 0; j < 40; j++ {
			labels[fmt.Sprintf("feature.node.kubernetes.io/cpu-cpuid.FEATURE%02d", j)] = "true"
		}
		b.must(b.c.Create(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%03d", i), Labels: labels}}))
	}
	b.must(b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}))
	for i := 0; i < 5000; i++ {
		b.must(b.c.Create(b.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "load", Name: fmt.Sprintf("cm-%04d", i)},
			Data: map[string]string{"k": strings.Repeat("v", 256)}}))
	}
	for i := 0; i < 100; i++ {
		crd := unrelatedCRD(i)
		b.must(b.c.Create(b.ctx, crd))
	}
	// The autopilot's cache holds every node before the heap is read.
	var all corev1.NodeList
	waitFor(b.t, "500 more nodes in the autopilot's cache", 30*time.Second, func() bool {
		return m.cache.List(b.ctx, &all) == nil && len(all.Items) >= 500
	})
	all = corev1.NodeList{}
	b.results["heap_loaded_mib"] = m.liveHeapMiB(b)
	writeHeapProfile(b.t, "loaded")
	b.results["heap_nodes_added"] = 500
}

// liveHeapMiB is the heap its last GC found live (runtime/metrics
// /gc/heap/live:bytes), right after a whole reconcile: the least of three
// readings, as a reconcile or watch event in flight only adds garbage that
// happens to be reachable.
func (m *manager) liveHeapMiB(b *bench) float64 {
	least := math.Inf(1)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for i := 0; i < 3; i++ {
		m.reconciledAt(b.t, b.poke())
		runtime.GC()
		metrics.Read(sample)
		least = math.Min(least, float64(sample[0].Value.Uint64())/(1<<20))
	}
	return least
}

// writeHeapProfile writes heap-<name>.pprof into BENCH_HEAPPROFILE (a
// folder), when set: compare with go tool pprof -diff_base.
func writeHeapProfile(t *testing.T, name string) {
	dir := os.Getenv("BENCH_HEAPPROFILE")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, "heap-"+name+".pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}

// render: the whole catalog offline, as a process (package initialisation
// included), median wall time and peak RSS; the binary is the one an admin
// runs offline (it links no API client: see package cli).
func (b *bench) render() {
	bin := filepath.Join(b.t.TempDir(), "virt-platform-autopilot")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/virt-platform-autopilot")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.t.Fatalf("build: %v\n%s", err, out)
	}
	args := []string{"render", "--hco-file", "config/samples/hco.yaml", "--nodes-file", "config/samples/nodes.yaml", "--output", "yaml"}
	b.results["render_all_ms"] = medianRun(b.t, bin, args)
	// What every command of this binary pays: process start and package
	// initialisation.
	b.results["version_ms"] = medianRun(b.t, bin, []string{"--version"})
	// Peak RSS through GNU time: a child forked from this (large) test
	// process reports this process's RSS as its own high-water mark.
	var peak int64
	if tm, err := exec.LookPath("/usr/bin/time"); err == nil {
		cmd := exec.Command(tm, append([]string{"-f", "%M", bin}, args...)...)
		cmd.Dir = testenv.RepoRoot()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			_, _ = fmt.Sscan(lines[len(lines)-1], &peak)
		}
	}
	b.results["render_all_peak_mib"] = float64(peak) / 1024
	if st, err := os.Stat(bin); err == nil {
		b.results["binary_mib"] = float64(st.Size()) / (1 << 20)
	}
	cluster := filepath.Join(b.t.TempDir(), "virt-platform-autopilot-cluster")
	build = exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", cluster, "./cmd/virt-platform-autopilot-cluster")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.t.Fatalf("build: %v\n%s", err, out)
	}
	if st, err := os.Stat(cluster); err == nil {
		b.results["cluster_binary_mib"] = float64(st.Size()) / (1 << 20)
	}
}

// medianRun is the median wall time of 31 runs of bin args, after one
// to warm the page cache.
func medianRun(t *testing.T, bin string, args []string) float64 {
	var times []time.Duration
	for i := 0; i < 32; i++ {
		cmd := exec.Command(bin, args...)
		cmd.Dir = testenv.RepoRoot()
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
		}
		if i > 0 {
			times = append(times, time.Since(t0))
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return ms(times[len(times)/2])
}

// thrash: a competing writer reverts one field every 100 ms; the corrective
// writes the default anti-thrashing budget allows (BENCH_THRASH, default 60s).
func (b *bench) thrash() {
	d := 60 * time.Second
	if v, err := time.ParseDuration(os.Getenv("BENCH_THRASH")); err == nil {
		d = v
	}
	// A restart on a cluster whose watch caches are warm (a real cluster's
	// case; a fresh envtest answers a new CRD's first list with 429 and the
	// client backs off a second).
	t0 := time.Now()
	// No settle period: the nodes the heap step added changed the workers'
	// hardware, and a MachineConfig write those facts ask for would wait
	// five minutes (pkg/settle); this measures the throttle alone.
	m := startWith(b.t, b.cfg, app.Config{SettlePeriod: -1})
	defer m.stop()
	waitFor(b.t, "converge", 60*time.Second, m.converged)
	b.results["restart_converge_ms"] = ms(time.Since(t0))
	mark := m.log.mark()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		u := b.mc(psiMC)
		if kernelArgs(u) != "psi=0" {
			b.must(unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments"))
			_ = b.c.Update(b.ctx, u, client.FieldOwner("competitor"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	n := 0
	for _, r := range m.log.since(mark) {
		if r.method != http.MethodGet && !r.dryRun && strings.HasSuffix(r.path, "/"+psiMC) {
			n++
		}
	}
	b.results["thrash_writes_60s"] = float64(n)
	b.results["thrash_seconds"] = d.Seconds()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (b *bench) report() {
	if err := os.MkdirAll(filepath.Join(testenv.RepoRoot(), "_output"), 0o755); err != nil {
		b.t.Fatal(err)
	}
	out := map[string]any{"results": b.results, "machine": machine(), "drift_repair_ms": durations(b.repairs),
		"reconcile_by_nodes": b.nodes, "reconcile_by_assets": b.assets}
	js, _ := json.MarshalIndent(out, "", "  ")
	path := filepath.Join(testenv.RepoRoot(), "_output", "bench.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		b.t.Fatal(err)
	}
	keys := make([]string, 0, len(b.results))
	for k := range b.results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("\n%-34s %12s\n", "metric", "value")
	for _, k := range keys {
		fmt.Printf("%-34s %12.2f\n", k, b.results[k])
	}
	fmt.Printf("\nwrote %s\n%s\n%s\n%s", path, histogram(b.repairs),
		chart("full reconcile with nothing to do, by nodes:", b.nodes), chart("full reconcile with nothing to do, by assets (ConfigMaps):", b.assets))
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

// histogram draws the drift-repair latency distribution in text.
func histogram(ds []time.Duration) string {
	if len(ds) == 0 {
		return ""
	}
	bounds := []float64{2, 5, 10, 15, 20, 30, 50, 100, 1e9}
	counts := make([]int, len(bounds))
	for _, d := range ds {
		v := ms(d)
		for i, b := range bounds {
			if v <= b {
				counts[i]++
				break
			}
		}
	}
	var sb strings.Builder
	sb.WriteString("drift repair latency (edit → corrective write), " + fmt.Sprint(len(ds)) + " edits:\n")
	prev := 0.0
	for i, b := range bounds {
		label := fmt.Sprintf("%3.0f–%3.0f ms", prev, b)
		if b > 1e8 {
			label = fmt.Sprintf("  > %3.0f ms", prev)
		}
		fmt.Fprintf(&sb, "%s | %-50s %d\n", label, strings.Repeat("█", counts[i]*50/len(ds)), counts[i])
		prev = b
	}
	return sb.String()
}

func machine() map[string]any {
	return map[string]any{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": runtime.NumCPU(), "go": runtime.Version(), "at": time.Now().UTC().Format(time.RFC3339)}
}
