package engine

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// A write that changes which pools a MachineConfig reaches (a label a
// custom pool selects on, a role a patch changes) rolls the pools it
// leaves and joins, reaches nodes through labels alone, and is never
// lighter than a reboot.
func TestPoolsOfAMove(t *testing.T) {
	pool := func(name string, sel map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name},
			"spec": map[string]any{"machineConfigSelector": map[string]any{"matchLabels": sel}}}}
	}
	rc := &rendercontext.RenderContext{}
	rc.Pools = []*unstructured.Unstructured{
		pool("worker", map[string]any{"machineconfiguration.openshift.io/role": "worker"}),
		pool("gpu", map[string]any{"gpu": "x"}),
		pool("infra", map[string]any{"machineconfiguration.openshift.io/role": "infra"}),
	}
	mc := func(labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": "MachineConfig"}}
		u.SetLabels(labels)
		return u
	}
	restart := []nodedisruption.Action{{Type: nodedisruption.Restart, Unit: "a.service"}}
	for _, c := range []struct {
		name       string
		live, next map[string]string
		pools      []string
		moves      bool
	}{
		{"unchanged", map[string]string{"machineconfiguration.openshift.io/role": "worker"}, map[string]string{"machineconfiguration.openshift.io/role": "worker"}, []string{"worker"}, false},
		{"leaves a custom pool", map[string]string{"machineconfiguration.openshift.io/role": "worker", "gpu": "x"}, map[string]string{"machineconfiguration.openshift.io/role": "worker"}, []string{"gpu", "worker"}, true},
		{"a patch changes its role", map[string]string{"machineconfiguration.openshift.io/role": "worker"}, map[string]string{"machineconfiguration.openshift.io/role": "infra"}, []string{"infra", "worker"}, true},
		{"a label no pool reads", map[string]string{"machineconfiguration.openshift.io/role": "worker"}, map[string]string{"machineconfiguration.openshift.io/role": "worker", "team": "a"}, []string{"worker"}, false},
	} {
		d := &Decision{Live: mc(c.live), Desired: mc(c.next), NodeActions: restart}
		poolsOf(d, rc)
		if !slices.Equal(d.Pools, c.pools) || d.MovesPools != c.moves {
			t.Errorf("%s: pools %v moves %v, want %v %v", c.name, d.Pools, d.MovesPools, c.pools, c.moves)
		}
		if c.moves && d.NodeActions != nil {
			t.Errorf("%s: a move is judged lighter than a reboot: %v", c.name, d.NodeActions)
		}
	}
}
