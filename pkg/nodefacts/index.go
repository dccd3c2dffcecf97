// Package nodefacts keeps what the autopilot reads of the nodes up to date
// from node events, so a reconcile neither lists nor copies nodes: each
// node is counted in its class (rendercontext.NodeClass), and a node event
// costs O(its labels). It also says whether an event changed any fact a
// render or decision reads (rendercontext.NodePrint), so one that did not
// enqueues nothing.
package nodefacts

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Index counts the nodes by class.
type Index struct {
	mu      sync.RWMutex
	classOf map[string]string // node name -> class key
	classes map[string]*rendercontext.NodeClass
	// synced reports that every node of the initial list was counted
	// (nil: not started).
	synced func() bool
	// read is the print of what the last Read returned, under the pools
	// it was given (readOnce: there was a Read).
	read     string
	readOnce bool
	pools    []*unstructured.Unstructured
	poolsErr error
}

// New returns an empty index.
func New() *Index {
	return &Index{classOf: map[string]string{}, classes: map[string]*rendercontext.NodeClass{}}
}

// Set counts n (added or updated) and says whether any node fact read
// changed since the last Read. n is not kept.
func (x *Index) Set(n *corev1.Node) bool {
	key := rendercontext.ClassKey(n)
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.classOf[n.Name]
	if had && old == key {
		return false // a status heartbeat, or a label nothing reads
	}
	if had {
		x.drop(old)
	}
	c := x.classes[key]
	if c == nil {
		nc := rendercontext.ClassOf(n)
		c = &nc
		x.classes[key] = c
	}
	// The class's own key: one string per class, not one per node.
	x.classOf[n.Name] = c.Key
	c.Count++
	return x.changed()
}

// Delete forgets the node name and says whether any node fact read changed
// since the last Read.
func (x *Index) Delete(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	key, had := x.classOf[name]
	if !had {
		return false
	}
	delete(x.classOf, name)
	x.drop(key)
	return x.changed()
}

func (x *Index) drop(key string) {
	if c := x.classes[key]; c != nil {
		if c.Count--; c.Count <= 0 {
			delete(x.classes, key)
		}
	}
}

// changed compares the print now with the last Read's; before any Read,
// every change counts. Called with mu held.
func (x *Index) changed() bool {
	return !x.readOnce || rendercontext.NodePrint(x.set(), x.pools, x.poolsErr) != x.read
}

// Read returns the node set a context reads, and remembers its print
// under pools (the pools the same reconcile read), so the events after it
// enqueue only for a change of what it read. The classes are a copy; the
// walk of node names reads the index as it is then.
//
// Until the node watch has counted every node of its initial list (and on
// a replica that does not lead, where the watch never starts) it returns
// nil: the caller lists the nodes instead (gather), from a cache that
// waits for its own sync. A partial index is never read as the cluster.
// (The controller's reconciles start only once it has synced.)
func (x *Index) Read(pools []*unstructured.Unstructured, poolsErr error) *rendercontext.NodeSet {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.synced == nil || !x.synced() {
		return nil
	}
	s := x.set()
	x.read, x.readOnce, x.pools, x.poolsErr = rendercontext.NodePrint(s, pools, poolsErr), true, pools, poolsErr
	return &s
}

// set copies the classes (a few dozen on any real cluster) and walks the
// names under the read lock. Called with mu held.
func (x *Index) set() rendercontext.NodeSet {
	classes := make([]rendercontext.NodeClass, 0, len(x.classes))
	for _, c := range x.classes {
		classes = append(classes, *c)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Key < classes[j].Key })
	return rendercontext.NewNodeSet(classes, x.walk)
}

func (x *Index) walk(yield func(name, key string) bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for name, key := range x.classOf {
		if !yield(name, key) {
			return
		}
	}
}
