package engine

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
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
	// Pools are every pool the write rolls, Pool's role pool and the
	// custom pools that take its MachineConfigs (nil: Pool alone).
	Pools []string `json:"pools,omitempty"`
	// Actions: the write reaches Pool's nodes without a drain; MCO takes
	// these actions on each node instead (the cluster's node disruption
	// policy: "restart kubevirt-thp-tuning.service", "none").
	Actions []string `json:"actions,omitempty"`
}

// String is the status column: "none", "reboots pool worker", or "no
// reboot in pool worker: restart kubevirt-thp-tuning.service".
func (d Disruption) String() string {
	pools := "pool " + poolName(d.Pool)
	if len(d.Pools) > 1 {
		pools = "pools " + strings.Join(d.Pools, ", ")
	}
	switch {
	case len(d.Actions) > 0:
		return fmt.Sprintf("no reboot in %s: %s", pools, strings.Join(d.Actions, ", "))
	case !d.Reboot:
		return "none"
	case d.Pool == "" && len(d.Pools) == 0:
		return "reboots a pool"
	}
	return "reboots " + pools
}

// Rolled names the pools a write rolls: Pools, else Pool alone.
func (d Disruption) Rolled() []string {
	if len(d.Pools) > 0 {
		return d.Pools
	}
	if d.Pool == "" {
		return nil
	}
	return []string{d.Pool}
}

// MayMovePools reports whether a change of drift's fields to an object of
// kind can move it between pools: a MachineConfig's labels (the pools'
// machineConfigSelectors read them), a KubeletConfig's
// machineConfigPoolSelector; a field above them counts (the whole map).
func MayMovePools(kind string, drift []string) bool {
	sel := map[string]string{"MachineConfig": "/metadata/labels", "KubeletConfig": "/spec/machineConfigPoolSelector"}[kind]
	if sel == "" {
		return false
	}
	for _, p := range drift {
		if p == sel || strings.HasPrefix(p, sel+"/") || strings.HasPrefix(sel, p+"/") {
			return true
		}
	}
	return false
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
// and for a reboot, the pool its rendered object targets, unless MCO's node
// disruption policy applies the change without a drain (d.NodeActions).
func DisruptionOf(d *Decision) Disruption {
	if d.Asset == nil || d.Asset.Disruption != catalog.DisruptionReboot {
		return Disruption{}
	}
	obj := d.Rendered
	if obj == nil {
		obj = d.Live
	}
	if len(d.NodeActions) > 0 {
		return Disruption{Pool: PoolOf(obj), Pools: d.Pools, Actions: nodedisruption.Strings(d.NodeActions)}
	}
	return Disruption{Reboot: true, Pool: PoolOf(obj), Pools: d.Pools}
}

// nodeActions is what MCO does on the pool's nodes to take a MachineConfig
// from its live spec to the desired one, when the cluster's node disruption
// policy makes that lighter than a drain; nil otherwise. Creation, a move to
// another pool, a policy MCO has not published and a KubeletConfig (whose
// generated kubelet.conf has no policy by default, and whose CPU and memory
// manager settings a kubelet restart cannot change) are all reboots.
func nodeActions(d *Decision, rc *rendercontext.RenderContext) []nodedisruption.Action {
	if d.Asset.Disruption != catalog.DisruptionReboot || d.Live == nil || d.Desired == nil ||
		d.Desired.GetKind() != "MachineConfig" || PoolOf(d.Live) != PoolOf(d.Desired) {
		return nil
	}
	policy, ok := rc.NodeDisruptionPolicy()
	if !ok {
		return nil
	}
	liveSpec, _ := d.Live.Object["spec"].(map[string]any)
	desiredSpec, _ := withLive(d.Desired, d.Live, d.Deferred).Object["spec"].(map[string]any)
	acts := policy.Actions(nodedisruption.Diff(liveSpec, desiredSpec))
	if nodedisruption.Drains(acts) {
		return nil
	}
	return acts
}

// ObjectDisruption is what writing or deleting u does to nodes, by its kind
// (the rule the catalog's declarations are checked against), naming only
// the pool of its role; RemovalDisruption names every pool it reaches.
func ObjectDisruption(u *unstructured.Unstructured) Disruption {
	if u == nil || !catalog.RebootKinds[u.GetKind()] {
		return Disruption{}
	}
	return Disruption{Reboot: true, Pool: PoolOf(u)}
}

// RemovalDisruption is what deleting u does to nodes: MCO renders every
// pool u reaches now without it, so each of them reboots (judged no
// lighter: MCO would match a removed file against the node disruption
// policy too, but a removed unit, and an object's files together, are
// not worth predicting for a deletion a person asked for). The
// pools come from their selectors, as for a write (PoolsReached), custom
// pools included; every deletion path reads them here.
func RemovalDisruption(rc *rendercontext.RenderContext, u *unstructured.Unstructured) Disruption {
	dis := ObjectDisruption(u)
	if dis.Reboot {
		dis.Pools = rc.PoolsReached(u)
	}
	return dis
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

// poolsOf sets the pools a write of d's object rolls: those the object
// reaches as it would be applied (a patch may change its labels or
// selector) and those it reaches now, which a move also rolls. A write that
// moves the object between pools reaches nodes through its labels alone,
// and is never lighter than a reboot.
func poolsOf(d *Decision, rc *rendercontext.RenderContext) {
	next := d.Desired
	if next == nil {
		next = d.Rendered
	} else if d.Live != nil {
		next = withLive(next, d.Live, d.Deferred) // the owners' labels stay
	}
	now := rc.PoolsReached(d.Live)
	then := rc.PoolsReached(next)
	d.Pools = union(now, then)
	d.PoolsUnknown = rc.PoolsErr != nil
	if d.Live != nil && next != nil && !slices.Equal(now, then) {
		d.MovesPools = true
		d.NodeActions = nil
	}
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
