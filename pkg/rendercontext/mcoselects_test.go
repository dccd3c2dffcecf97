package rendercontext

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The table is read from MCO's code, not from MCOSelects:
// machine-config-operator pkg/controller/kubelet-config/
// kubelet_config_controller.go getPoolsForKubeletConfig converts
// spec.machineConfigPoolSelector with metav1.LabelSelectorAsSelector
// (nil: labels.Nothing(); an error: the KubeletConfig is not applied) and
// skips a pool when `selector.Empty() || !selector.Matches(pool labels)`.
// LabelSelectorAsSelector gives an Empty() selector for {} and for
// matchLabels/matchExpressions that are both empty.
func TestMCOSelectsAsMCO(t *testing.T) {
	worker := labels.Set{"pools.operator.machineconfiguration.openshift.io/worker": "", "custom": "x"}
	for _, c := range []struct {
		name     string
		selector any // nil: absent
		want     bool
	}{
		{"absent: labels.Nothing()", nil, false},
		{"{}: Empty()", map[string]any{}, false},
		{"empty matchLabels: Empty()", map[string]any{"matchLabels": map[string]any{}}, false},
		{"empty matchExpressions: Empty()", map[string]any{"matchExpressions": []any{}}, false},
		{"matchLabels the pool has", map[string]any{"matchLabels": map[string]any{"custom": "x"}}, true},
		{"matchLabels the pool lacks", map[string]any{"matchLabels": map[string]any{"custom": "y"}}, false},
		{"Exists on the pool's label", map[string]any{"matchExpressions": []any{map[string]any{"key": "custom", "operator": "Exists"}}}, true},
		{"DoesNotExist on a label it lacks", map[string]any{"matchExpressions": []any{map[string]any{"key": "gpu", "operator": "DoesNotExist"}}}, true},
		{"an operator not valid: an error, not applied", map[string]any{"matchExpressions": []any{map[string]any{"key": "custom", "operator": "Near"}}}, false},
	} {
		kc := &unstructured.Unstructured{Object: map[string]any{"kind": "KubeletConfig", "spec": map[string]any{}}}
		if c.selector != nil {
			kc.Object["spec"].(map[string]any)["machineConfigPoolSelector"] = c.selector
		}
		if got := MCOSelects(kc, worker, "spec", "machineConfigPoolSelector"); got != c.want {
			t.Errorf("%s: selects=%v, MCO says %v", c.name, got, c.want)
		}
		pool := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		pool.SetName("worker")
		pool.SetLabels(worker)
		if c.selector != nil {
			kc.Object["spec"].(map[string]any)["machineConfigPoolSelector"] = c.selector
		}
		rc := &RenderContext{}
		rc.Pools = []*unstructured.Unstructured{pool}
		if got := len(rc.PoolsReached(kc)) > 0; got != c.want {
			t.Errorf("%s: PoolsReached gives %v, MCO says %v", c.name, rc.PoolsReached(kc), c.want)
		}
	}
}

// The table is read from MCO's code, not from poolOfClasses:
// machine-config-operator pkg/helpers/helpers.go ListPools keeps the pools
// whose nodeSelector matches the node, skipping `selector.Empty()` ("it
// should match nothing, not everything"), and sorts them into master,
// worker and custom by name; GetPoolsForNode then returns, primary first:
// more than one custom pool, an error (the node is not managed); one
// custom pool, master if it matched, else the custom pool (then worker);
// master, master; else worker.
func TestPoolOfNodesAsMCO(t *testing.T) {
	pool := func(name string, sel map[string]any) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		p.SetName(name)
		if sel != nil {
			p.Object["spec"].(map[string]any)["nodeSelector"] = sel
		}
		return p
	}
	role := func(r string) map[string]any {
		return map[string]any{"matchLabels": map[string]any{"node-role.kubernetes.io/" + r: ""}}
	}
	pools := []*unstructured.Unstructured{
		pool("master", role("master")), pool("worker", role("worker")),
		pool("infra", role("infra")), pool("virt", role("virt")),
		pool("empty", map[string]any{}), pool("absent", nil),
	}
	for _, c := range []struct {
		roles []string
		want  string // the primary pool; "" none
	}{
		{[]string{"worker"}, "worker"},
		{[]string{"master"}, "master"},
		{[]string{"master", "worker"}, "master"},
		{[]string{"worker", "infra"}, "infra"},
		{[]string{"infra"}, "infra"},
		{[]string{"master", "infra"}, "master"},
		{[]string{"master", "worker", "infra"}, "master"},
		{[]string{"worker", "infra", "virt"}, ""},
		{[]string{"master", "infra", "virt"}, ""},
		{[]string{"storage"}, ""},
		{nil, ""},
	} {
		l := map[string]string{}
		for _, r := range c.roles {
			l["node-role.kubernetes.io/"+r] = ""
		}
		rc := New(Facts{Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: l}}}, Observed: Observed{Pools: pools}})
		got, err := rc.poolOfClasses()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != c.want {
			t.Errorf("roles %v: pool %q, MCO says %q", c.roles, got[0], c.want)
		}
	}
}

// The table is read from MCO's render controller, not from PoolTakes:
// machine-config-operator pkg/controller/render/render_controller.go
// syncMachineConfigPool returns without rendering when
// reflect.DeepEqual(pool.Spec.MachineConfigSelector, &LabelSelector{})
// (the SelectingAll event), else converts the selector with
// metav1.LabelSelectorAsSelector (nil: labels.Nothing(); matchLabels and
// matchExpressions both empty: labels.Everything(); an error fails the
// sync) and renders every MachineConfig it lists. A worker MachineConfig
// reaches the pools MCO renders it into, and waits for those alone.
func TestPoolTakesAsMCORendersIt(t *testing.T) {
	for _, c := range []struct {
		name     string
		selector any // nil: absent
		want     bool
	}{
		{"absent: labels.Nothing()", nil, false},
		{"{}: equal to LabelSelector{}, nothing rendered", map[string]any{}, false},
		{"matchLabels null: decodes to LabelSelector{}", map[string]any{"matchLabels": nil}, false},
		{"matchLabels present and empty: labels.Everything()", map[string]any{"matchLabels": map[string]any{}}, true},
		{"matchExpressions present and empty: labels.Everything()", map[string]any{"matchExpressions": []any{}}, true},
		{"the worker role", map[string]any{"matchLabels": map[string]any{roleLabel: "worker"}}, true},
		{"the master role", map[string]any{"matchLabels": map[string]any{roleLabel: "master"}}, false},
		{"role in (worker, infra)", map[string]any{"matchExpressions": []any{map[string]any{"key": roleLabel, "operator": "In", "values": []any{"worker", "infra"}}}}, true},
		{"an operator not valid: the sync fails", map[string]any{"matchExpressions": []any{map[string]any{"key": roleLabel, "operator": "Near"}}}, false},
	} {
		stray := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		stray.SetName("stray")
		if c.selector != nil {
			stray.Object["spec"].(map[string]any)["machineConfigSelector"] = c.selector
		}
		worker := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"machineConfigSelector": map[string]any{"matchLabels": map[string]any{roleLabel: "worker"}}}}}
		worker.SetName("worker")
		rc := &RenderContext{}
		rc.Pools = []*unstructured.Unstructured{worker, stray}
		mc := &unstructured.Unstructured{Object: map[string]any{"kind": "MachineConfig"}}
		mc.SetLabels(map[string]string{roleLabel: "worker"})
		want := []string{"worker"}
		if c.want {
			want = []string{"stray", "worker"}
		}
		if got := rc.PoolsReached(mc); !slices.Equal(got, want) {
			t.Errorf("%s: reached %v, MCO renders it into %v", c.name, got, want)
		}
		if got := slices.Sorted(slices.Values(rc.poolsRendering("worker"))); !slices.Equal(got, want) {
			t.Errorf("%s: pools rendering worker %v, MCO %v", c.name, got, want)
		}
	}
}
