package rendercontext

import (
	"fmt"
	"sort"
)

// PoolSwap is the swap the VM nodes of one pool report: how many nodes run
// VMs there (worker role, schedulable masters included) and how many of
// them report swap (status.nodeInfo.swap.capacity above zero).
type PoolSwap struct {
	Pool     string `json:"pool"`
	Nodes    int    `json:"nodes"`
	WithSwap int    `json:"withSwap"`
}

// Swap reports, per pool, the swap its VM nodes actually have, as their
// kubelets report it: the swap MachineConfig turns swap on only where an
// OCPSWAP partition exists, so its presence says nothing about a node.
// A node whose kubelet reports no swap status counts as without swap.
// Pools are as MCO assigns nodes ("" when they cannot be told).
func (rc *RenderContext) Swap() []PoolSwap {
	assigned, err := rc.poolOfClasses()
	by := map[string]*PoolSwap{}
	for i := range rc.nodes.Classes {
		c := &rc.nodes.Classes[i]
		if _, worker := c.Labels[labelWorker]; !worker {
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
		p.Nodes += c.Count
		if c.Swap {
			p.WithSwap += c.Count
		}
	}
	out := make([]PoolSwap, 0, len(by))
	for _, p := range by {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// SwapOnEveryVMNode reports whether there are VM nodes and every one of
// them reports swap: only then is memory overcommitted beyond what RAM
// can hold without it.
func (rc *RenderContext) SwapOnEveryVMNode() bool {
	pools := rc.Swap()
	for _, p := range pools {
		if p.WithSwap < p.Nodes {
			return false
		}
	}
	return len(pools) > 0
}

// SwapGaps says, per pool whose VM nodes do not all report swap, how many
// do (none when every VM node does).
func (rc *RenderContext) SwapGaps() []string {
	var out []string
	for _, p := range rc.Swap() {
		if p.WithSwap < p.Nodes {
			pool := p.Pool
			if pool == "" {
				pool = "(no pool)"
			}
			out = append(out, fmt.Sprintf("pool %s: %d of %d VM nodes report swap (an OCPSWAP partition turns it on)", pool, p.WithSwap, p.Nodes))
		}
	}
	return out
}
