package rendercontext

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NodeClass is a group of nodes the autopilot cannot tell apart: the same
// labels it reads (NodeLabelRead), the same GPU resources in their
// capacity, the same swap reported. Every node fact (topology, hardware,
// pools, swap) is a function of a node's class, so a context computes each
// once per class and weighs it by the class's count: a cluster of 5,000
// nodes is a few dozen classes.
type NodeClass struct {
	// Key names the class (ClassKey): equal keys, equal facts.
	Key    string
	Labels map[string]string
	// GPUResource: a GPU resource is in the nodes' capacity (any quantity,
	// as hardware detection reads it).
	GPUResource bool
	// Swap: the kubelet reports swap capacity above zero.
	Swap  bool
	Count int
}

// NodeSet is what a context reads of the nodes: their classes, and a walk
// of the nodes by name for the few answers that name nodes (a pool's nodes
// for a rollout's impact, the nodes a NodeHealthCheck selects).
type NodeSet struct {
	// Classes, sorted by key, each with at least one node.
	Classes []NodeClass
	// walk yields each node's name and class key until yield says stop.
	walk func(yield func(name, key string) bool)
}

// NewNodeSet is a set of classes whose nodes walk yields (name, class
// key); the controller's node index keeps both up to date from node events.
func NewNodeSet(classes []NodeClass, walk func(yield func(name, key string) bool)) NodeSet {
	return NodeSet{Classes: classes, walk: walk}
}

// NodesOf classes a node list (offline, a live client's list).
func NodesOf(nodes []corev1.Node) NodeSet {
	keys := make([]string, len(nodes))
	by := map[string]*NodeClass{}
	for i := range nodes {
		keys[i] = ClassKey(&nodes[i])
		if c := by[keys[i]]; c != nil {
			c.Count++
			continue
		}
		c := ClassOf(&nodes[i])
		c.Count = 1
		by[keys[i]] = &c
	}
	classes := make([]NodeClass, 0, len(by))
	for _, c := range by {
		classes = append(classes, *c)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Key < classes[j].Key })
	return NodeSet{Classes: classes, walk: func(yield func(string, string) bool) {
		for i := range nodes {
			if !yield(nodes[i].Name, keys[i]) {
				return
			}
		}
	}}
}

// Len is the number of nodes.
func (s NodeSet) Len() int {
	n := 0
	for i := range s.Classes {
		n += s.Classes[i].Count
	}
	return n
}

// names lists, sorted, the nodes whose class in reports true.
func (s NodeSet) names(in func(key string) bool) []string {
	var out []string
	if s.walk != nil {
		s.walk(func(name, key string) bool {
			if in(key) {
				out = append(out, name)
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

// ClassKey names n's class: the labels NodeLabelRead keeps, sorted, the
// GPU resource and the swap flag.
func ClassKey(n *corev1.Node) string {
	keys := make([]string, 0, len(n.Labels))
	for k := range n.Labels {
		if NodeLabelRead(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		// Label keys and values hold neither '=' in the key nor '\n'.
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(n.Labels[k])
		b.WriteByte('\n')
	}
	b.WriteString(strconv.FormatBool(gpuResource(n)))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatBool(swapReported(n)))
	return b.String()
}

// ClassOf is n's class, with its own copy of the labels read and a count
// of zero.
func ClassOf(n *corev1.Node) NodeClass {
	c := NodeClass{Key: ClassKey(n), GPUResource: gpuResource(n), Swap: swapReported(n)}
	for k, v := range n.Labels {
		if NodeLabelRead(k) {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[k] = v
		}
	}
	return c
}

func gpuResource(n *corev1.Node) bool {
	for r := range n.Status.Capacity {
		if NodeResourceRead(string(r)) {
			return true
		}
	}
	return false
}

func swapReported(n *corev1.Node) bool {
	s := n.Status.NodeInfo.Swap
	return s != nil && s.Capacity != nil && *s.Capacity > 0
}

// NodePrint summarizes every node fact a context reads: two node sets with
// the same print, under the same pools, give every render and decision the
// same facts (topology and its counts, each pool's hardware, nodes and
// swap, and which classes a selector can match). It changes when a node
// joins or leaves, moves pool or role, or is the first or last of its
// class; not when a node takes labels other nodes of its pool already
// show.
func NodePrint(s NodeSet, pools []*unstructured.Unstructured, poolsErr error) string {
	rc := &RenderContext{nodes: s, Observed: Observed{Pools: pools, PoolsErr: poolsErr}}
	var b strings.Builder
	t := nodeTopology(s)
	b.WriteString(strconv.Itoa(t.masters) + " " + strconv.Itoa(t.workers) + " " + strconv.Itoa(t.schedulableMasters) + " " + strconv.Itoa(t.nodes) + "\n")
	for i := range s.Classes {
		b.WriteString(s.Classes[i].Key)
		b.WriteByte('\x00')
	}
	assigned, err := rc.poolOfClasses()
	if err != nil {
		b.WriteString("pools: " + err.Error())
	} else {
		count := map[string]int{}
		for i, p := range assigned {
			count[p] += s.Classes[i].Count
		}
		pools := make([]string, 0, len(count))
		for p := range count {
			pools = append(pools, p)
		}
		slices.Sort(pools)
		for _, p := range pools {
			b.WriteString("\x00" + p + "=" + strconv.Itoa(count[p]))
		}
	}
	for _, p := range rc.Swap() {
		b.WriteString("\x00swap " + p.Pool + "=" + strconv.Itoa(p.Nodes) + "/" + strconv.Itoa(p.WithSwap))
	}
	return b.String()
}
