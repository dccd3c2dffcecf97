//go:build bench

package bench

import (
	"fmt"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// point is one measurement of a full reconcile that finds nothing to do.
type point struct {
	N        int     `json:"n"`
	Ms       float64 `json:"reconcile_ms"`
	Requests float64 `json:"requests"`
}

// reconcileCost: median time and mean requests of 5 full reconciles that
// find nothing to do.
func (b *bench) reconcileCost(m *manager, n int) point {
	m.reconciledAt(b.t, b.poke())
	mark := m.log.mark()
	var ds []time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		m.reconciledAt(b.t, b.poke())
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return point{N: n, Ms: ms(ds[2]), Requests: float64(len(m.log.since(mark))) / 5}
}

// scaleNodes: the cost of a reconcile as the cluster grows to 2,000 nodes
// (nodes are facts: hardware and topology are read from every one).
func (b *bench) scaleNodes(m *manager) []point {
	var nodes corev1.NodeList
	b.must(b.c.List(b.ctx, &nodes))
	have := len(nodes.Items)
	var out []point
	for _, target := range []int{have, 1000, 2000} {
		for ; have < target; have++ {
			b.must(b.c.Create(b.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%04d", have),
				Labels: map[string]string{"node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}}}))
		}
		out = append(out, b.reconcileCost(m, target))
	}
	return out
}

// scaleAssets: the cost of a reconcile against the number of assets, with a
// synthetic catalog of N ConfigMaps (the per-asset pipeline is the same for
// every kind).
func (b *bench) scaleAssets() []point {
	b.must(b.c.Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}))
	tpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-{{ .Params.n }}\n  namespace: bench\ndata:\n  k: v\n"
	fsys := fstest.MapFS{"cm.yaml.tpl": {Data: []byte(tpl)}}
	var out []point
	for _, n := range []int{25, 50, 100, 200} {
		var y strings.Builder
		y.WriteString("features: [{name: scale, description: scaling assets, maturity: ga}]\nassets:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&y, "  - {name: cm-%03d, feature: scale, path: cm.yaml.tpl, component: ConfigMap, tier: 1, reconcile_order: 10, install: always, disruption: none, params: {n: \"%03d\"}}\n", i, i)
		}
		cat, err := catalog.Parse(fsys, []byte(y.String()))
		b.must(err)
		m := startWith(b.t, b.cfg, app.Config{Throttle: throttle.Config{Burst: 100000, Refill: time.Millisecond}, Catalog: cat, Templates: fsys})
		waitFor(b.t, fmt.Sprintf("%d assets converge", n), 60*time.Second, func() bool {
			return len(m.rec.Snapshot().Assets) == n && m.rec.Snapshot().Health.HCOResourceVersion != ""
		})
		out = append(out, b.reconcileCost(m, n))
		m.stop()
	}
	return out
}

// chart draws points as text: one bar per point, scaled to the largest.
func chart(title string, ps []point) string {
	var sb strings.Builder
	sb.WriteString(title + "\n")
	top := 0.0
	for _, p := range ps {
		if p.Ms > top {
			top = p.Ms
		}
	}
	for _, p := range ps {
		bar := 0
		if top > 0 {
			bar = int(p.Ms / top * 40)
		}
		fmt.Fprintf(&sb, "%6d | %-40s %7.2f ms, %.1f requests\n", p.N, strings.Repeat("█", bar), p.Ms, p.Requests)
	}
	return sb.String()
}
