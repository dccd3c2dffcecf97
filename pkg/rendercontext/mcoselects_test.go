package rendercontext

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The table is read from MCO's code, not from MCOSelects:
// machine-config-operator pkg/controller/kubelet-config/
// kubelet_config_controller.go getPoolsForKubeletConfig converts
// spec.machineConfigPoolSelector with metav1.LabelSelectorAsSelector
// (nil: labels.Nothing(); an error: the KubeletConfig is not applied) and
// skips a pool when `selector.Empty() || !selector.Matches(pool labels)`;
// pkg/controller/render/render_controller.go getMachineConfigsForPool
// returns no MachineConfig for a pool whose machineConfigSelector is
// Empty(). LabelSelectorAsSelector gives an Empty() selector for {} and for
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
