// Package impact says what a pool's rollout does to the VMs on it before
// it happens. MCO drains each node of the pool in turn, so every running
// VirtualMachineInstance there is evicted: it live-migrates, or, when it
// cannot, it blocks the drain (and the rollout) or it is shut down. Which
// one follows KubeVirt's eviction strategy (the VMI's own, else the
// cluster's from the HCO) and the VMI's LiveMigratable condition.
//
// VMIs are listed from the API server when asked (a rollout pending or a
// diff asked for), never cached: the autopilot holds no memory per VM.
package impact

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// VMIGVK is KubeVirt's VirtualMachineInstance.
var VMIGVK = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}

// Fate is what a drain does to one VMI.
type Fate string

// Fates of a VMI on a node that is drained.
const (
	Migrates    Fate = "migrates"
	BlocksDrain Fate = "blocks-drain"
	Stops       Fate = "stops"
)

// Eviction strategies (KubeVirt's EvictionStrategy).
const (
	strategyNone          = "None"
	strategyLiveMigrate   = "LiveMigrate"
	strategyIfPossible    = "LiveMigrateIfPossible"
	strategyExternal      = "External"
	liveMigratableCondTyp = "LiveMigratable"
)

// Judge says what draining its node does to vmi, and why when it does not
// simply migrate. clusterStrategy applies when the VMI sets none.
func Judge(vmi *VMI, clusterStrategy string) (Fate, string) {
	strategy := vmi.Spec.EvictionStrategy
	if strategy == "" {
		strategy = clusterStrategy
	}
	migratable, why := liveMigratable(vmi)
	switch strategy {
	case strategyLiveMigrate:
		if migratable {
			return Migrates, ""
		}
		return BlocksDrain, "not live-migratable (" + why + ") with evictionStrategy LiveMigrate: the drain waits until it is stopped or moved by hand"
	case strategyIfPossible:
		if migratable {
			return Migrates, ""
		}
		return Stops, "not live-migratable (" + why + "): evictionStrategy LiveMigrateIfPossible shuts it down"
	case strategyExternal:
		return BlocksDrain, "evictionStrategy External: the drain waits for the external controller"
	case strategyNone:
		return Stops, "evictionStrategy None: shut down (restarted elsewhere if its run strategy says so)"
	}
	return BlocksDrain, fmt.Sprintf("evictionStrategy %q is not one KubeVirt knows: the drain may not get past it", strategy)
}

// liveMigratable reads the VMI's LiveMigratable condition; unknown (no
// condition yet) is not migratable, as KubeVirt treats it.
func liveMigratable(vmi *VMI) (bool, string) {
	for _, c := range vmi.Status.Conditions {
		if c.Type != liveMigratableCondTyp {
			continue
		}
		if c.Status == "True" {
			return true, ""
		}
		reason := c.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return false, reason
	}
	return false, "no LiveMigratable condition reported"
}

// ClusterStrategy is the cluster's eviction strategy from the effective
// HCO (spec.evictionStrategy); unset, KubeVirt's default: LiveMigrate with
// more than one worker, None on a single one.
func ClusterStrategy(rc *rendercontext.RenderContext) string {
	if s, ok, _ := unstructured.NestedString(rc.HCO, "spec", "evictionStrategy"); ok && s != "" {
		return s
	}
	if rc.Topology.Workers > 1 {
		return strategyLiveMigrate
	}
	return strategyNone
}

// Pool is what a rollout of one pool does to its VMs.
type Pool struct {
	Pool  string   `json:"pool"`
	Nodes []string `json:"nodes"`
	// Migrate counts the VMIs that live-migrate.
	Migrate int `json:"migrate"`
	// Blocking and Stopping name the VMIs that cannot migrate
	// ("namespace/name: why"): they block the drain, or are shut down.
	Blocking []string `json:"blocking,omitempty"`
	Stopping []string `json:"stopping,omitempty"`
	// Unknown says why the VMs could not be counted ("" when they were).
	Unknown string `json:"unknown,omitempty"`
}

// String is the pool's impact in one line.
func (p Pool) String() string {
	nodes := fmt.Sprintf("%d node(s) (%s)", len(p.Nodes), strings.Join(clip(p.Nodes), ", "))
	if p.Unknown != "" {
		return nodes + "; VMs not counted: " + p.Unknown
	}
	s := fmt.Sprintf("%s, %d VMI(s) live-migrate", nodes, p.Migrate)
	if len(p.Blocking) > 0 {
		s += fmt.Sprintf("; %d block the drain: %s", len(p.Blocking), strings.Join(clip(p.Blocking), "; "))
	}
	if len(p.Stopping) > 0 {
		s += fmt.Sprintf("; %d are shut down: %s", len(p.Stopping), strings.Join(clip(p.Stopping), "; "))
	}
	return s
}

// Counts is the pool's impact without a name: how many nodes drain and
// how many VMIs migrate, block the drain or are shut down. It is what a
// reader who may see the plan but not the VMs' namespaces is shown (the
// console view).
func (p Pool) Counts() string {
	nodes := fmt.Sprintf("%d node(s) drained in turn", len(p.Nodes))
	if p.Unknown != "" {
		return nodes + "; VMs not counted"
	}
	s := fmt.Sprintf("%s, %d VMI(s) live-migrate", nodes, p.Migrate)
	if len(p.Blocking) > 0 {
		s += fmt.Sprintf("; %d block the drain", len(p.Blocking))
	}
	if len(p.Stopping) > 0 {
		s += fmt.Sprintf("; %d are shut down", len(p.Stopping))
	}
	return s
}

// clip keeps a message readable on a cluster with many VMs.
func clip(names []string) []string {
	const most = 5
	if len(names) <= most {
		return names
	}
	return append(slices.Clone(names[:most]), fmt.Sprintf("and %d more", len(names)-most))
}

// pageSize bounds one LIST response: the VMIs are read in pages, never
// all in one answer.
const pageSize = 500

// Of lists the running VMIs once (in pages) and says, for each pool, what
// its rollout does to them. A pool whose nodes cannot be told, or VMIs
// that cannot be listed, is Unknown with the reason; without the VMI CRD
// there are none.
func Of(ctx context.Context, r client.Reader, rc *rendercontext.RenderContext, pools []string) []Pool {
	nodeOf := map[string]int{}
	out := make([]Pool, len(pools))
	for i, name := range pools {
		out[i].Pool = name
		nodes, err := rc.PoolNodes(name)
		if err != nil {
			out[i].Unknown = err.Error()
			continue
		}
		out[i].Nodes = nodes
		for _, n := range nodes {
			nodeOf[n] = i
		}
	}
	if len(pools) == 0 || !rc.KindAvailable(VMIGVK) {
		return out // KubeVirt not installed (its CRD is not served): no VMs, no request
	}
	strategy := ClusterStrategy(rc)
	// Each page decodes into the few fields read (VMIList) and is dropped
	// once counted: memory holds one page, never every VMI.
	for cont := ""; ; {
		list := &VMIList{}
		err := r.List(ctx, list, client.Limit(pageSize), client.Continue(cont))
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			break // KubeVirt not installed: no VMs
		}
		if err != nil {
			for i := range out {
				if out[i].Unknown == "" {
					out[i].Unknown = "VirtualMachineInstances could not be listed: " + err.Error()
				}
			}
			return out
		}
		for i := range list.Items {
			vmi := &list.Items[i]
			node, phase := vmi.Status.NodeName, vmi.Status.Phase
			p, on := nodeOf[node]
			if !on || node == "" || phase != "Running" || out[p].Unknown != "" || vmi.Metadata.DeletionTimestamp != nil {
				continue // only a VM running on the pool's nodes is evicted
			}
			name := vmi.Metadata.Namespace + "/" + vmi.Metadata.Name
			switch fate, why := Judge(vmi, strategy); fate {
			case Migrates:
				out[p].Migrate++
			case BlocksDrain:
				out[p].Blocking = append(out[p].Blocking, name+": "+why)
			case Stops:
				out[p].Stopping = append(out[p].Stopping, name+": "+why)
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	for i := range out {
		sort.Strings(out[i].Blocking)
		sort.Strings(out[i].Stopping)
	}
	return out
}
