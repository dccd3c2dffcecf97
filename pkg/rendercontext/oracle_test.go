package rendercontext

// The computation over every node that node classes replaced, kept here
// only as the oracle of TestNodeClassesEqualTheNodeWalk: each function is
// the one a RenderContext ran before node facts were counted by class,
// unchanged but for taking its nodes and pools as arguments.

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// oracle is a cluster as the old walk read it.
type oracle struct {
	rc       *RenderContext // poolsRendering (unchanged: it reads pools, not nodes)
	nodes    []corev1.Node
	pools    []*unstructured.Unstructured
	poolsErr error
}

func oracleTopology(f Facts) Topology {
	var t Topology
	schedulableMasterNodes := 0
	for i := range f.Nodes {
		l := f.Nodes[i].Labels
		_, m := l[labelMaster]
		_, cp := l[labelControlPlane]
		_, w := l[labelWorker]
		if m || cp {
			t.Masters++
			if w {
				schedulableMasterNodes++
			}
		} else {
			t.Workers++
		}
	}
	t.Nodes = len(f.Nodes)
	if f.Infrastructure != nil {
		t.OpenShift = true
		t.ControlPlaneTopology, _, _ = unstructured.NestedString(f.Infrastructure.Object, "status", "controlPlaneTopology")
		t.Platform, _, _ = unstructured.NestedString(f.Infrastructure.Object, "status", "platformStatus", "type")
	}
	if f.Scheduler != nil {
		t.SchedulableMasters, _, _ = unstructured.NestedBool(f.Scheduler.Object, "spec", "mastersSchedulable")
	} else {
		// Without OpenShift's Scheduler object, masters that also carry the
		// worker role are schedulable.
		t.SchedulableMasters = schedulableMasterNodes > 0
	}
	t.ExternalControlPlane = t.ControlPlaneTopology == "External"
	t.SingleNode = t.ControlPlaneTopology == "SingleReplica" || (t.Nodes == 1 && t.Masters == 1)
	// Compact: every node is a control-plane node that also runs workloads.
	t.Compact = t.Masters > 0 && t.Workers == 0 && t.SchedulableMasters && !t.SingleNode
	if t.SingleNode {
		t.SchedulableMasters = true
	}
	return t
}
func oracleHardware(nodes []corev1.Node) Hardware {
	var h Hardware
	for i := range nodes {
		n := &nodes[i]
		for k, v := range n.Labels {
			if !strings.HasPrefix(k, nfd) {
				continue
			}
			feat := strings.TrimPrefix(k, nfd)
			switch {
			case strings.HasPrefix(feat, "pci-") && strings.HasSuffix(feat, ".present") && v == "true":
				h.PCIDevices = true
				// PCI class 03xx is a display controller.
				if strings.HasPrefix(feat, "pci-03") {
					h.GPU = true
				}
			case strings.HasPrefix(feat, "usb-") && strings.HasSuffix(feat, ".present") && v == "true":
				h.USBDevices = true
			case feat == "memory-numa" && v == "true":
				h.NUMA = true
			case feat == "iommu-enabled" && v == "true":
				h.IOMMU = true
			case feat == "network-sriov.capable" && v == "true":
				h.SRIOV = true
			case feat == "cpu-model.vendor_id":
				vendor := map[string]string{"Intel": "Intel", "GenuineIntel": "Intel", "AMD": "AMD", "AuthenticAMD": "AMD"}[v]
				if vendor != "" && !slices.Contains(h.CPUVendors, vendor) {
					h.CPUVendors = append(h.CPUVendors, vendor)
				}
			}
		}
		for res := range n.Status.Capacity {
			r := string(res)
			if r == "nvidia.com/gpu" || r == "amd.com/gpu" || strings.HasPrefix(r, "gpu.intel.com/") {
				h.GPU = true
			}
		}
	}
	slices.Sort(h.CPUVendors)
	return h
}
func (o *oracle) hardwareFor(role, pool string) (Hardware, error) {
	targets := []string{pool}
	if pool == "" {
		targets = o.rc.poolsRendering(role)
	}
	assigned, err := o.poolOfNodes()
	if err != nil {
		return Hardware{}, err
	}
	var nodes []corev1.Node
	for i := range o.nodes {
		if slices.Contains(targets, assigned[i]) {
			nodes = append(nodes, o.nodes[i])
		}
	}
	return oracleHardware(nodes), nil
}
func (o *oracle) poolOfNodes() ([]string, error) {
	type pool struct {
		name string
		sel  labels.Selector
	}
	if o.poolsErr != nil {
		return nil, fmt.Errorf("the MachineConfigPools could not be read, so no pool's nodes can be told: %w", o.poolsErr)
	}
	var pools []pool
	for _, p := range o.pools {
		sel, err := selectorAt(p, "spec", "nodeSelector")
		if err != nil {
			return nil, fmt.Errorf("MachineConfigPool %s: nodeSelector: %w", p.GetName(), err)
		}
		if err := readable(sel); err != nil {
			return nil, fmt.Errorf("MachineConfigPool %s: %w", p.GetName(), err)
		}
		pools = append(pools, pool{p.GetName(), sel})
	}
	if len(pools) == 0 {
		for _, name := range []string{masterPool, workerPool} {
			r, _ := labels.NewRequirement(nodeRolePrefix+name, selection.Exists, nil)
			pools = append(pools, pool{name, labels.NewSelector().Add(*r)})
		}
	}
	out := make([]string, len(o.nodes))
	for i := range o.nodes {
		var matched []string
		for _, p := range pools {
			if !p.sel.Empty() && p.sel.Matches(labels.Set(o.nodes[i].Labels)) {
				matched = append(matched, p.name)
			}
		}
		custom := slices.DeleteFunc(slices.Clone(matched), func(n string) bool { return n == workerPool || n == masterPool })
		switch {
		case len(custom) > 1:
			// Refused by MCO, whatever else claims it.
		case slices.Contains(matched, masterPool):
			out[i] = masterPool
		case len(custom) == 1:
			out[i] = custom[0]
		case len(matched) == 1:
			out[i] = matched[0]
		}
	}
	return out, nil
}
func (o *oracle) PoolNodes(pool string) ([]string, error) {
	assigned, err := o.poolOfNodes()
	if err != nil {
		return nil, err
	}
	var out []string
	for i, p := range assigned {
		if p == pool {
			out = append(out, o.nodes[i].Name)
		}
	}
	return out, nil
}
func (o *oracle) NodesSelected(sel labels.Selector) ([]string, error) {
	if err := readable(sel); err != nil {
		return nil, err
	}
	var out []string
	for i := range o.nodes {
		if sel.Matches(labels.Set(o.nodes[i].Labels)) {
			out = append(out, o.nodes[i].Name)
		}
	}
	return out, nil
}
func (o *oracle) Swap() []PoolSwap {
	assigned, err := o.poolOfNodes()
	by := map[string]*PoolSwap{}
	for i := range o.nodes {
		n := &o.nodes[i]
		if _, worker := n.Labels[labelWorker]; !worker {
			continue // VMs run on workers (schedulable masters carry the role too)
		}
		pool := ""
		if err == nil {
			pool = assigned[i]
		}
		p := by[pool]
		if p == nil {
			p = &PoolSwap{Pool: pool}
			by[pool] = p
		}
		p.Nodes++
		if s := n.Status.NodeInfo.Swap; s != nil && s.Capacity != nil && *s.Capacity > 0 {
			p.WithSwap++
		}
	}
	out := make([]PoolSwap, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// genCluster draws a cluster: nodes with the labels, GPU resources and
// swap detection reads, and labels it does not; pools as OpenShift ships
// them, custom ones, broken ones, or none.
func genCluster(r *rand.Rand) ([]corev1.Node, []*unstructured.Unstructured, error) {
	read := []string{
		nodeRolePrefix + "master", nodeRolePrefix + "worker", nodeRolePrefix + "control-plane",
		nodeRolePrefix + "infra", nodeRolePrefix + "virt",
		nfd + "pci-0300_10de.present", nfd + "pci-0200_15b3.present", nfd + "usb-ef_046d.present",
		nfd + "memory-numa", nfd + "iommu-enabled", nfd + "network-sriov.capable",
	}
	values := []string{"true", "false", ""}
	vendors := []string{"Intel", "GenuineIntel", "AMD", "AuthenticAMD", "Hygon"}
	nodes := make([]corev1.Node, r.IntN(40))
	for i := range nodes {
		n := &nodes[i]
		n.Name = fmt.Sprintf("node-%02d", i)
		n.Labels = map[string]string{"kubernetes.io/hostname": n.Name, nfd + "cpu-cpuid.AVX": "true"}
		for _, l := range read {
			if r.IntN(3) == 0 {
				n.Labels[l] = values[r.IntN(len(values))]
			}
		}
		if r.IntN(2) == 0 {
			n.Labels[nfd+"cpu-model.vendor_id"] = vendors[r.IntN(len(vendors))]
		}
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
		switch r.IntN(4) {
		case 0:
			n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("0")
		case 1:
			n.Status.Capacity["gpu.intel.com/i915"] = resource.MustParse("1")
		}
		if r.IntN(3) == 0 {
			swap := int64(r.IntN(2)) << 30
			n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &swap}
		}
		if i > 0 && r.IntN(2) == 0 {
			// A node like another: real pools are a few kinds of machine.
			like := nodes[r.IntN(i)].DeepCopy()
			like.Name, like.Labels["kubernetes.io/hostname"] = n.Name, n.Name
			*n = *like
		}
	}
	if r.IntN(8) == 0 {
		return nodes, nil, fmt.Errorf("pools forbidden")
	}
	sel := func(key string) map[string]any {
		return map[string]any{"matchLabels": map[string]any{key: ""}}
	}
	var pools []*unstructured.Unstructured
	if r.IntN(6) != 0 {
		pools = append(pools, pool("master", "master"), pool("worker", "worker"))
		for _, custom := range []string{"infra", "virt"} {
			if r.IntN(2) == 0 {
				pools = append(pools, pool(custom, "worker", custom))
			}
		}
		switch r.IntN(6) {
		case 0: // a pool by hardware
			p := pool("gpu", "worker", "gpu")
			p.Object["spec"].(map[string]any)["nodeSelector"] = sel(nfd + "pci-0300_10de.present")
			pools = append(pools, p)
		case 1: // a pool on a label the cache drops: no pool's nodes can be told
			p := pool("zone", "worker")
			p.Object["spec"].(map[string]any)["nodeSelector"] = sel("topology.kubernetes.io/zone")
			pools = append(pools, p)
		case 2: // an empty selector matches nothing
			p := pool("stray", "worker")
			p.Object["spec"].(map[string]any)["nodeSelector"] = map[string]any{}
			pools = append(pools, p)
		}
	}
	return nodes, pools, nil
}

// Node facts counted by class equal the walk over every node they
// replaced, on every generated cluster: topology, hardware, each pool's
// hardware, nodes and swap, and the nodes a selector picks.
func TestNodeClassesEqualTheNodeWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 5000))
	sorted := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		if len(s) == 0 {
			return nil
		}
		return s
	}
	selectors := []labels.Selector{labels.Everything(), labels.Nothing(),
		labels.SelectorFromSet(labels.Set{nodeRolePrefix + "worker": ""}),
		labels.SelectorFromSet(labels.Set{nfd + "memory-numa": "true"}),
		labels.SelectorFromSet(labels.Set{"kubernetes.io/hostname": "node-01"}),
	}
	for i := 0; i < 3000; i++ {
		nodes, pools, poolsErr := genCluster(r)
		f := Facts{Nodes: nodes, Observed: Observed{Pools: pools, PoolsErr: poolsErr}}
		if r.IntN(3) == 0 {
			f.Scheduler = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"mastersSchedulable": r.IntN(2) == 0}}}
		}
		rc := New(f)
		o := &oracle{rc: rc, nodes: nodes, pools: pools, poolsErr: poolsErr}
		if want := oracleTopology(f); rc.Topology != want {
			t.Fatalf("cluster %d: topology %+v, the walk %+v", i, rc.Topology, want)
		}
		if want := oracleHardware(nodes); !reflect.DeepEqual(rc.Hardware, want) {
			t.Fatalf("cluster %d: hardware %+v, the walk %+v", i, rc.Hardware, want)
		}
		for _, params := range []map[string]string{{ParamRole: "worker"}, {ParamRole: "master"}, {ParamRole: "infra"},
			{ParamPool: "worker"}, {ParamPool: "master"}, {ParamPool: "virt"}, {ParamPool: "gpu"}} {
			got, err := rc.HardwareFor(params)
			want, werr := o.hardwareFor(params[ParamRole], params[ParamPool])
			if (err != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("cluster %d %v: %+v (%v), the walk %+v (%v)", i, params, got, err, want, werr)
			}
		}
		for _, p := range []string{"master", "worker", "infra", "virt", "gpu", "zone", ""} {
			got, err := rc.PoolNodes(p)
			want, werr := o.PoolNodes(p)
			if (err != nil) != (werr != nil) || !slices.Equal(sorted(got), sorted(want)) || !slices.IsSorted(got) {
				t.Fatalf("cluster %d: pool %q nodes %v (%v), the walk %v (%v)", i, p, got, err, want, werr)
			}
		}
		for _, sel := range selectors {
			got, err := rc.NodesSelected(sel)
			want, werr := o.NodesSelected(sel)
			if (err != nil) != (werr != nil) || !slices.Equal(sorted(got), sorted(want)) {
				t.Fatalf("cluster %d: %s selects %v (%v), the walk %v (%v)", i, sel, got, err, want, werr)
			}
		}
		if got, want := rc.Swap(), o.Swap(); !reflect.DeepEqual(got, want) {
			t.Fatalf("cluster %d: swap %+v, the walk %+v", i, got, want)
		}
	}
}

// A node event that leaves the print unchanged changes no fact a render or
// decision reads, judged by the walk: topology, hardware, each pool's
// hardware, node count and swap, and whether a selector matches any node.
// (And the print does not always change: label churn within a pool is
// free, which is what the print is for.)
func TestNodePrintCoversEveryFact(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	type facts struct {
		Topology Topology
		Hardware Hardware
		PoolHW   map[string]Hardware
		PoolErr  map[string]bool
		Pools    map[string]int
		Swap     []PoolSwap
		Selected []bool
	}
	selectors := []labels.Selector{
		labels.SelectorFromSet(labels.Set{nodeRolePrefix + "worker": ""}),
		labels.SelectorFromSet(labels.Set{nfd + "memory-numa": "true"}),
		labels.SelectorFromSet(labels.Set{nfd + "pci-0300_10de.present": "true", nodeRolePrefix + "infra": ""}),
	}
	read := func(nodes []corev1.Node, pools []*unstructured.Unstructured, poolsErr error) facts {
		f := Facts{Nodes: nodes, Observed: Observed{Pools: pools, PoolsErr: poolsErr}}
		o := &oracle{rc: New(f), nodes: nodes, pools: pools, poolsErr: poolsErr}
		out := facts{Topology: oracleTopology(f), Hardware: oracleHardware(nodes), PoolHW: map[string]Hardware{}, PoolErr: map[string]bool{}, Pools: map[string]int{}, Swap: o.Swap()}
		for _, p := range []string{"master", "worker", "infra", "virt", "gpu"} {
			hw, err := o.hardwareFor("", p)
			out.PoolHW[p], out.PoolErr[p] = hw, err != nil
			names, _ := o.PoolNodes(p)
			out.Pools[p] = len(names)
		}
		for _, sel := range selectors {
			names, _ := o.NodesSelected(sel)
			out.Selected = append(out.Selected, len(names) > 0)
		}
		return out
	}
	same := 0
	for i := 0; i < 3000; i++ {
		nodes, pools, poolsErr := genCluster(r)
		if len(nodes) < 2 {
			continue
		}
		after := slices.Clone(nodes)
		k := r.IntN(len(after))
		switch r.IntN(4) {
		case 0: // a node leaves
			after = slices.Delete(after, k, k+1)
		case 1: // a node takes another's labels (churn within known kinds)
			n := after[r.IntN(len(after))].DeepCopy()
			n.Name = after[k].Name
			after[k] = *n
		case 2: // a label flips
			n := after[k].DeepCopy()
			l := []string{nfd + "memory-numa", nfd + "iommu-enabled", nodeRolePrefix + "infra", nfd + "pci-0300_10de.present"}[r.IntN(4)]
			if _, ok := n.Labels[l]; ok {
				delete(n.Labels, l)
			} else {
				n.Labels[l] = "true"
			}
			after[k] = *n
		case 3: // a label nothing reads
			n := after[k].DeepCopy()
			n.Labels["kubernetes.io/hostname"] = "renamed"
			after[k] = *n
		}
		if NodePrint(NodesOf(nodes), pools, poolsErr) != NodePrint(NodesOf(after), pools, poolsErr) {
			continue
		}
		same++
		if b, a := read(nodes, pools, poolsErr), read(after, pools, poolsErr); !reflect.DeepEqual(b, a) {
			t.Fatalf("cluster %d: the print did not change, the facts did:\nbefore %+v\nafter  %+v", i, b, a)
		}
	}
	if same < 500 {
		t.Fatalf("only %d of the events left the print unchanged: churn would reconcile every time", same)
	}
	t.Logf("%d events changed no fact read", same)
}
