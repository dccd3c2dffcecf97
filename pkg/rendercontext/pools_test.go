package rendercontext

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func poolNode(name string, labels ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for _, l := range labels {
		n.Labels[l] = ""
	}
	return n
}

const numaLabel = nfd + "memory-numa"

func withNUMA(n corev1.Node) corev1.Node {
	n.Labels[numaLabel] = "true"
	return n
}

// pool is a MachineConfigPool as OpenShift ships them: its nodes by role
// label, its MachineConfigs by role (a custom pool also takes worker's).
func pool(name string, mcRoles ...string) *unstructured.Unstructured {
	roles := make([]any, len(mcRoles))
	for i, r := range mcRoles {
		roles[i] = r
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"nodeSelector": map[string]any{"matchLabels": map[string]any{nodeRolePrefix + name: ""}},
			"machineConfigSelector": map[string]any{"matchExpressions": []any{map[string]any{
				"key": roleLabel, "operator": "In", "values": roles}}},
		},
	}}
}

// A pool's facts come from its own nodes, as MCO assigns them: a worker
// that is also in a custom pool belongs to the custom pool, a master that
// is also a worker to the master pool; a worker-role MachineConfig
// configures the custom pools that take worker's MachineConfigs too.
func TestHardwareForScopesFactsToThePool(t *testing.T) {
	pools := []*unstructured.Unstructured{pool("master", "master"), pool("worker", "worker"), pool("infra", "worker", "infra")}
	cases := []struct {
		name        string
		nodes       []corev1.Node
		pools       []*unstructured.Unstructured
		params      map[string]string
		numa        bool
		clusterNUMA bool
	}{
		{"NUMA only on a master: not a worker fact", []corev1.Node{withNUMA(poolNode("m", labelMaster)), poolNode("w", labelWorker)}, pools, map[string]string{ParamRole: "worker"}, false, true},
		{"the master's own", []corev1.Node{withNUMA(poolNode("m", labelMaster)), poolNode("w", labelWorker)}, pools, map[string]string{ParamRole: "master"}, true, true},
		{"compact: master+worker nodes are the master pool's", []corev1.Node{withNUMA(poolNode("m", labelMaster, labelWorker))}, pools, map[string]string{ParamPool: "worker"}, false, true},
		{"custom pool node: not the worker pool's kubelet", []corev1.Node{withNUMA(poolNode("i", labelWorker, nodeRolePrefix+"infra")), poolNode("w", labelWorker)}, pools, map[string]string{ParamPool: "worker"}, false, true},
		{"custom pool node: configured by worker-role MachineConfigs", []corev1.Node{withNUMA(poolNode("i", labelWorker, nodeRolePrefix+"infra")), poolNode("w", labelWorker)}, pools, map[string]string{ParamRole: "worker"}, true, true},
		{"two custom pools: MCO refuses the node", []corev1.Node{withNUMA(poolNode("x", labelWorker, nodeRolePrefix+"infra", nodeRolePrefix+"gpu"))}, append(pools, pool("gpu", "worker", "gpu")), map[string]string{ParamRole: "worker"}, false, true},
		{"no pools read: by role label", []corev1.Node{withNUMA(poolNode("m", labelMaster)), poolNode("w", labelWorker)}, nil, map[string]string{ParamRole: "worker"}, false, true},
		{"not pool-scoped: every node", []corev1.Node{withNUMA(poolNode("m", labelMaster)), poolNode("w", labelWorker)}, pools, nil, true, true},
	}
	for _, c := range cases {
		rc := New(Facts{Nodes: c.nodes, Observed: Observed{Pools: c.pools}})
		h, err := rc.HardwareFor(c.params)
		if err != nil || h.NUMA != c.numa || rc.Hardware.NUMA != c.clusterNUMA {
			t.Errorf("%s: NUMA %v (cluster %v), err %v; want %v", c.name, h.NUMA, rc.Hardware.NUMA, err, c.numa)
		}
	}
}

// Over generated clusters: a fact only nodes outside a pool have never
// reaches that pool's assets, and one of its own nodes always does.
func TestHardwareForNeverReadsAnotherPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	pools := []*unstructured.Unstructured{pool("master", "master"), pool("worker", "worker"), pool("infra", "worker", "infra")}
	roles := [][]string{{labelMaster}, {labelWorker}, {labelWorker, nodeRolePrefix + "infra"}, {labelMaster, labelWorker}}
	owner := []string{"master", "worker", "infra", "master"}
	for i := range 500 {
		var nodes []corev1.Node
		numaIn := map[string]bool{}
		for j := range 1 + rng.IntN(6) {
			k := rng.IntN(len(roles))
			n := poolNode(fmt.Sprintf("n%d", j), roles[k]...)
			if rng.IntN(2) == 0 {
				n = withNUMA(n)
				numaIn[owner[k]] = true
			}
			nodes = append(nodes, n)
		}
		rc := New(Facts{Nodes: nodes, Observed: Observed{Pools: pools}})
		for p, want := range map[string]bool{"master": numaIn["master"], "worker": numaIn["worker"], "infra": numaIn["infra"]} {
			h, err := rc.HardwareFor(map[string]string{ParamPool: p})
			if err != nil || h.NUMA != want {
				t.Fatalf("case %d pool %s: NUMA %v (err %v), want %v; nodes %v", i, p, h.NUMA, err, want, nodes)
			}
		}
		h, _ := rc.HardwareFor(map[string]string{ParamRole: "worker"})
		if want := numaIn["worker"] || numaIn["infra"]; h.NUMA != want {
			t.Fatalf("case %d role worker: NUMA %v, want %v", i, h.NUMA, want)
		}
	}
}

// A pool selecting nodes on a label the node cache drops cannot be told:
// an error, never "no hardware".
func TestHardwareForUnknownSelectorIsAnError(t *testing.T) {
	p := pool("worker", "worker")
	_ = unstructured.SetNestedField(p.Object, map[string]any{"example.com/rack": "a"}, "spec", "nodeSelector", "matchLabels")
	rc := New(Facts{Nodes: []corev1.Node{withNUMA(poolNode("w", labelWorker))}, Observed: Observed{Pools: []*unstructured.Unstructured{p}}})
	if _, err := rc.HardwareFor(map[string]string{ParamPool: "worker"}); err == nil {
		t.Fatal("want an error")
	}
}

// A write reaches every pool that renders it: a worker-role MachineConfig
// the worker pool and each custom pool taking worker's MachineConfigs; a
// KubeletConfig the pools its selector matches by their labels.
func TestPoolsReached(t *testing.T) {
	withLabel := func(u *unstructured.Unstructured, k string) *unstructured.Unstructured {
		u.SetLabels(map[string]string{k: ""})
		return u
	}
	rc := &RenderContext{}
	rc.Pools = []*unstructured.Unstructured{
		withLabel(pool("worker", "worker"), "pools.operator.machineconfiguration.openshift.io/worker"),
		pool("virt", "worker", "virt"),
		withLabel(pool("master", "master"), "pools.operator.machineconfiguration.openshift.io/master"),
		{Object: map[string]any{"metadata": map[string]any{"name": "no-selector"}}},
	}
	mc := func(role string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": "MachineConfig"}}
		u.SetLabels(map[string]string{roleLabel: role})
		return u
	}
	kc := func(pool string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": "KubeletConfig", "spec": map[string]any{
			"machineConfigPoolSelector": map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/" + pool: ""}}}}}
	}
	for _, c := range []struct {
		obj  *unstructured.Unstructured
		want []string
	}{
		{mc("worker"), []string{"virt", "worker"}},
		{mc("virt"), []string{"virt"}},
		{mc("master"), []string{"master"}},
		{mc("infra"), nil},
		{kc("worker"), []string{"virt", "worker"}}, // MCO renders it as a worker-role MachineConfig, which virt takes too
		{kc("master"), []string{"master"}},
	} {
		if got := rc.PoolsReached(c.obj); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s %v: pools %v, want %v", c.obj.GetKind(), c.obj.GetLabels(), got, c.want)
		}
	}
	if got := (&RenderContext{}).PoolsReached(mc("worker")); got != nil {
		t.Errorf("no pools read: %v, want nil (the role's pool)", got)
	}
}
