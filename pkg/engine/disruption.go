package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

// Labels MCO reads to place configuration in a pool: a MachineConfig's role,
// and the pool label a KubeletConfig's selector names.
const (
	mcRoleLabel     = "machineconfiguration.openshift.io/role"
	poolLabelPrefix = "pools.operator.machineconfiguration.openshift.io/"
)

// Disruption is what applying one decision does to nodes.
type Disruption struct {
	// Reboot: the Machine Config Operator drains and reboots Pool's nodes.
	Reboot bool   `json:"reboot"`
	Pool   string `json:"pool,omitempty"`
}

// String is the status column: "none" or "reboots pool worker".
func (d Disruption) String() string {
	if !d.Reboot {
		return "none"
	}
	if d.Pool == "" {
		return "reboots a pool"
	}
	return "reboots pool " + d.Pool
}

// ReachesNodes reports whether a change of drift's fields reaches nodes:
// spec does; labels and annotations do not (a MachineConfig's metadata is
// not rendered into the pool's configuration).
func ReachesNodes(drift []string) bool {
	for _, p := range drift {
		if p == "/spec" || strings.HasPrefix(p, "/spec/") || p == "(object absent)" {
			return true
		}
	}
	return false
}

// DisruptionOf reads the disruption of a decision: the catalog's declaration,
// and for a reboot, the pool its rendered object targets.
func DisruptionOf(d *Decision) Disruption {
	if d.Asset == nil || d.Asset.Disruption != catalog.DisruptionReboot {
		return Disruption{}
	}
	obj := d.Rendered
	if obj == nil {
		obj = d.Live
	}
	return Disruption{Reboot: true, Pool: PoolOf(obj)}
}

// ObjectDisruption is what writing or deleting u does to nodes, by its kind
// (the rule the catalog's declarations are checked against).
func ObjectDisruption(u *unstructured.Unstructured) Disruption {
	if u == nil || !catalog.RebootKinds[u.GetKind()] {
		return Disruption{}
	}
	return Disruption{Reboot: true, Pool: PoolOf(u)}
}

// PoolOf names the MachineConfigPool a MachineConfig or KubeletConfig
// configures ("" when it cannot tell).
func PoolOf(u *unstructured.Unstructured) string {
	if u == nil {
		return ""
	}
	if role := u.GetLabels()[mcRoleLabel]; role != "" {
		return role
	}
	sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "machineConfigPoolSelector", "matchLabels")
	for k := range sel {
		if pool, ok := strings.CutPrefix(k, poolLabelPrefix); ok {
			return pool
		}
	}
	return ""
}
