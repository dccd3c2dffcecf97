package rendercontext

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
)

// Asset parameters that scope an asset to node pools.
const (
	// ParamRole is a MachineConfig's role (machineconfiguration.openshift.io/role):
	// every pool whose machineConfigSelector takes that role renders it.
	ParamRole = "role"
	// ParamPool is the one MachineConfigPool a KubeletConfig selects.
	ParamPool = "pool"
)

const (
	roleLabel      = "machineconfiguration.openshift.io/role"
	nodeRolePrefix = "node-role.kubernetes.io/"
	workerPool     = "worker"
	masterPool     = "master"
)

// HardwareFor returns the hardware facts that decide an asset's node
// configuration: for a pool-scoped asset (params role or pool) only the
// nodes of the pools it configures, as MCO assigns nodes to pools (custom
// pools included); otherwise every node. A fact of another pool never
// decides this one. An error means the pools' nodes cannot be told (a
// selector on a label the node cache does not hold): unknown, never false.
func (rc *RenderContext) HardwareFor(params map[string]string) (Hardware, error) {
	role, pool := params[ParamRole], params[ParamPool]
	if role == "" && pool == "" {
		return rc.Hardware, nil
	}
	key := role + "\x00" + pool
	if rc.poolHW != nil {
		if m, ok := rc.poolHW.get(key); ok {
			return m.hw, m.err
		}
	}
	hw, err := rc.hardwareFor(role, pool)
	if rc.poolHW != nil {
		rc.poolHW.put(key, memoHW{hw, err})
	}
	return hw, err
}

// poolMemo remembers each pool scope's hardware for one RenderContext
// (its facts do not change): conditions and renders of every pool asset
// ask, and each answer is a walk over every node.
type poolMemo struct {
	mu sync.Mutex
	m  map[string]memoHW
}

type memoHW struct {
	hw  Hardware
	err error
}

func (p *poolMemo) get(k string) (memoHW, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[k]
	return v, ok
}

func (p *poolMemo) put(k string, v memoHW) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[k] = v
}

func (rc *RenderContext) hardwareFor(role, pool string) (Hardware, error) {
	targets := []string{pool}
	if pool == "" {
		targets = rc.poolsRendering(role)
	}
	assigned, err := rc.poolOfClasses()
	if err != nil {
		return Hardware{}, err
	}
	return union(rc.classHW, func(i int) bool { return slices.Contains(targets, assigned[i]) }), nil
}

// poolsRendering names the pools whose machineConfigSelector takes
// MachineConfigs of role; without pools read (offline, not OpenShift) the
// pool of the role's name.
func (rc *RenderContext) poolsRendering(role string) []string {
	if len(rc.Pools) == 0 {
		return []string{role}
	}
	var out []string
	mc := labels.Set{roleLabel: role}
	for _, p := range rc.Pools {
		if PoolTakes(p, mc) {
			out = append(out, p.GetName())
		}
	}
	return out
}

// poolOfClasses assigns each node class (by index) to its primary pool
// as MCO assigns each node (machine-config-operator pkg/helpers/helpers.go GetPoolsForNode and
// ListPools): among the pools whose nodeSelector matches it (an empty one
// matches nothing), master first, whatever else claims it; else its one
// custom pool (a custom pool's nodes are workers too); else worker. A node
// two custom pools claim belongs to none, master or not (MCO refuses it). Without pools
// read, a node's pool is its role label's, master before worker.
func (rc *RenderContext) poolOfClasses() ([]string, error) {
	type pool struct {
		name string
		sel  labels.Selector
	}
	if rc.PoolsErr != nil {
		return nil, fmt.Errorf("the MachineConfigPools could not be read, so no pool's nodes can be told: %w", rc.PoolsErr)
	}
	var pools []pool
	for _, p := range rc.Pools {
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
	classes := rc.nodes.Classes
	out := make([]string, len(classes))
	for i := range classes {
		var matched []string
		for _, p := range pools {
			if !p.sel.Empty() && p.sel.Matches(labels.Set(classes[i].Labels)) {
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

// PoolNodes names, sorted, the nodes MCO assigns to pool (poolOfClasses);
// an error when that cannot be told (pools unreadable, a selector on a
// label the node cache drops).
func (rc *RenderContext) PoolNodes(pool string) ([]string, error) {
	assigned, err := rc.poolOfClasses()
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for i, p := range assigned {
		if p == pool {
			in[rc.nodes.Classes[i].Key] = true
		}
	}
	return rc.nodes.names(func(key string) bool { return in[key] }), nil
}

// NodesSelected names, sorted, the nodes sel matches. An error means sel
// reads a label the node cache does not hold (NodeLabelRead): which nodes
// it selects is unknown, never "none".
func (rc *RenderContext) NodesSelected(sel labels.Selector) ([]string, error) {
	if err := readable(sel); err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for i := range rc.nodes.Classes {
		if sel.Matches(labels.Set(rc.nodes.Classes[i].Labels)) {
			in[rc.nodes.Classes[i].Key] = true
		}
	}
	if len(in) == 0 {
		return nil, nil
	}
	return rc.nodes.names(func(key string) bool { return in[key] }), nil
}

// readable checks that every label sel reads is one the node cache keeps.
func readable(sel labels.Selector) error {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if !NodeLabelRead(r.Key()) {
			return fmt.Errorf("it selects nodes on label %s, which the autopilot does not read: its nodes cannot be told", r.Key())
		}
	}
	return nil
}

// selectorAt reads a metav1.LabelSelector at path of u; absent is the
// empty selector (which selects nothing here: MCO does not use it).
func selectorAt(u *unstructured.Unstructured, path ...string) (labels.Selector, error) {
	raw, found, err := unstructured.NestedMap(u.Object, path...)
	if err != nil || !found {
		return labels.Nothing(), err
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// MCOSelects is MCO's rule for a KubeletConfig's (and a
// ContainerRuntimeConfig's) machineConfigPoolSelector over a pool's
// labels: a selector that is absent, empty or not valid matches nothing,
// never everything (machine-config-operator
// pkg/controller/kubelet-config/kubelet_config_controller.go
// getPoolsForKubeletConfig: "If a pool with a nil or empty selector creeps
// in, it should match nothing, not everything", `selector.Empty()`).
func MCOSelects(u *unstructured.Unstructured, set labels.Set, path ...string) bool {
	sel, err := selectorAt(u, path...)
	return err == nil && !sel.Empty() && sel.Matches(set)
}

// PoolTakes is MCO's rule for a pool's machineConfigSelector over a
// MachineConfig's labels, as its render controller applies it
// (machine-config-operator pkg/controller/render/render_controller.go
// syncMachineConfigPool): an absent (nil) selector converts to
// labels.Nothing(); one equal to the empty LabelSelector{} renders nothing
// (the SelectingAll event); one not valid fails the sync; but one whose
// matchLabels or matchExpressions is present and empty is not equal to
// LabelSelector{} and converts to labels.Everything(): every
// MachineConfig of every role renders into that pool.
func PoolTakes(pool *unstructured.Unstructured, set labels.Set) bool {
	raw, found, err := unstructured.NestedFieldNoCopy(pool.Object, "spec", "machineConfigSelector")
	m, ok := raw.(map[string]any)
	if err != nil || !found || !ok {
		return false
	}
	present := false
	for _, k := range []string{"matchLabels", "matchExpressions"} {
		if v, ok := m[k]; ok && v != nil {
			present = true
		}
	}
	if !present {
		return false // LabelSelector{} (a null field decodes to nil too)
	}
	sel, err := selectorAt(pool, "spec", "machineConfigSelector")
	return err == nil && sel.Matches(set)
}

// PoolsReached names, sorted, the pools whose configuration u changes: for
// a MachineConfig every pool whose machineConfigSelector matches its
// labels (a custom pool that takes the worker role's MachineConfigs rolls
// with the worker pool), for a KubeletConfig every pool whose labels its
// machineConfigPoolSelector matches (MCOSelects). nil when no pool was
// read or none matches (the caller falls back to the role's pool).
func (rc *RenderContext) PoolsReached(u *unstructured.Unstructured) []string {
	if u == nil || len(rc.Pools) == 0 {
		return nil
	}
	var out []string
	for _, p := range rc.Pools {
		var match bool
		switch u.GetKind() {
		case "MachineConfig":
			match = PoolTakes(p, labels.Set(u.GetLabels()))
		case "KubeletConfig", "ContainerRuntimeConfig":
			// MCO reads both the same way (getPoolsForKubeletConfig,
			// getPoolsForContainerRuntimeConfig).
			match = MCOSelects(u, labels.Set(p.GetLabels()), "spec", "machineConfigPoolSelector")
		}
		if match {
			out = append(out, p.GetName())
		}
	}
	if u.GetKind() == "KubeletConfig" || u.GetKind() == "ContainerRuntimeConfig" {
		// MCO renders a KubeletConfig into a MachineConfig of each selected
		// pool's role, which every pool taking that role's MachineConfigs
		// (a custom pool taking worker's) renders too.
		for _, role := range slices.Clone(out) {
			out = append(out, rc.poolsRendering(role)...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
