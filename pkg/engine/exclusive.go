package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// scope is how one vendor computes what an object of an exclusive kind
// holds, and what goes wrong when two objects hold the same part.
type scope struct {
	gvk schema.GroupVersionKind
	// unit names what the scope is made of ("pool", "node").
	unit string
	// holds names the units o holds on this cluster.
	holds func(o *unstructured.Unstructured, rc *rendercontext.RenderContext) ([]string, error)
	// harm says what applying over another object would do.
	harm string
}

var scopes = map[string]scope{
	catalog.ExclusivePool: {
		gvk: rendercontext.KubeletConfigGVK, unit: "pool", holds: poolsHeld,
		harm: "MCO lets the newest KubeletConfig of a pool replace the others' kubelet.conf",
	},
	catalog.ExclusiveNodes: {
		gvk: rendercontext.NodeHealthCheckGVK, unit: "node", holds: nodesHeld,
		harm: "NodeHealthChecks must not overlap: on a node two checks select, the first to start a remediation wins and the other's settings never apply",
	},
}

// Clash explains why desired, the object that would be applied (after the
// user's patch and mask), must not be: its asset declares its kind
// exclusive per scope (catalog Exclusive) and a foreign object of the kind
// (an admin's, or an old one of the autopilot's that is kept) already
// holds part of that scope, so applying desired would silently undo the
// other's settings, or be undone by them. "" when there is no clash; an
// error when the objects or their scope could not be read (a clash cannot
// be ruled out).
func Clash(a *catalog.Asset, desired *unstructured.Unstructured, rc *rendercontext.RenderContext) (string, error) {
	s, ok := scopes[a.Exclusive]
	if !ok || desired == nil {
		return "", nil
	}
	if err := rc.PeersErr[s.gvk]; err != nil {
		return "", fmt.Errorf("cannot tell whether another %s holds the same %s: %w", s.gvk.Kind, s.unit, err)
	}
	mine, err := s.holds(desired, rc)
	if err != nil {
		return "", fmt.Errorf("cannot tell which %ss %s %s holds: %w", s.unit, desired.GetKind(), desired.GetName(), err)
	}
	shared := map[string][]string{} // unit -> the others holding it
	for _, o := range rc.Peers[s.gvk] {
		if o.GetName() == desired.GetName() && o.GetNamespace() == desired.GetNamespace() {
			continue
		}
		theirs, err := s.holds(o, rc)
		if err != nil {
			return "", fmt.Errorf("cannot tell which %ss %s %s holds: %w", s.unit, o.GetKind(), o.GetName(), err)
		}
		for _, u := range theirs {
			if slices.Contains(mine, u) {
				shared[u] = append(shared[u], o.GetName())
			}
		}
	}
	if len(shared) == 0 {
		return "", nil
	}
	units := make([]string, 0, len(shared))
	for u := range shared {
		units = append(units, u)
	}
	sort.Strings(units)
	var clashes []string
	for _, u := range units {
		others := shared[u]
		sort.Strings(others)
		clashes = append(clashes, fmt.Sprintf("%s %s already selects %s %s", s.gvk.Kind, strings.Join(others, ", "), s.unit, u))
	}
	const most = 5 // a check over a hundred nodes is one sentence, not a hundred
	if len(clashes) > most {
		clashes = append(clashes[:most], fmt.Sprintf("and %d more %ss", len(units)-most, s.unit))
	}
	kind, name := desired.GetKind(), desired.GetName()
	return fmt.Sprintf("%s; %s, so %s is not applied. Keep yours: add %s/%s to the HCO's %s. Or use the autopilot's: delete yours, then carry its settings over with a %s annotation on %s",
		strings.Join(clashes, "; "), s.harm, name, kind, name, annotations.DisabledResources, annotations.Patch, name), nil
}

// poolsHeld names the pools a KubeletConfig's machineConfigPoolSelector
// selects, as MCO reads it (absent or empty selects nothing):
// among the live pools, or (offline, or not OpenShift) among the two every
// OpenShift cluster has and the one its own pool label names, each with
// the label every pool carries.
func poolsHeld(kc *unstructured.Unstructured, rc *rendercontext.RenderContext) ([]string, error) {
	if rc.PoolsErr != nil {
		return nil, fmt.Errorf("the MachineConfigPools could not be read: %w", rc.PoolsErr)
	}
	var out []string
	for _, p := range rc.Pools {
		if selects(kc, labels.Set(p.GetLabels())) {
			out = append(out, p.GetName())
		}
	}
	if len(rc.Pools) == 0 {
		for _, pool := range []string{"master", "worker", PoolOf(kc)} {
			if pool != "" && !slices.Contains(out, pool) && selects(kc, labels.Set{poolLabelPrefix + pool: ""}) {
				out = append(out, pool)
			}
		}
	}
	return out, nil
}

// nodesHeld names the nodes a NodeHealthCheck's spec.selector selects, as
// NHC reads it: its webhook refuses an empty selector on new checks, but
// its controller still runs older ones, selecting every node.
func nodesHeld(nhc *unstructured.Unstructured, rc *rendercontext.RenderContext) ([]string, error) {
	raw, _, err := unstructured.NestedMap(nhc.Object, "spec", "selector")
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	return rc.NodesSelected(sel)
}

// selects reports whether a KubeletConfig's machineConfigPoolSelector
// matches a pool's labels, as MCO reads it (rendercontext.MCOSelects: no
// selector, an empty one or one not valid selects nothing).
func selects(kc *unstructured.Unstructured, pool labels.Set) bool {
	return rendercontext.MCOSelects(kc, pool, "spec", "machineConfigPoolSelector")
}
