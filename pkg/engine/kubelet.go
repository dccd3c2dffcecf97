package engine

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// Clash explains why desired, the object that would be applied (after the
// user's patch and mask), must not be: its asset declares its kind
// exclusive per scope (catalog Exclusive) and a foreign object of the kind
// already holds part of that scope. For exclusive: pool, that is another
// KubeletConfig selecting one of the pools desired selects (an admin's, or
// an old one of the autopilot's that is kept): MCO renders every
// KubeletConfig of a pool into its own MachineConfig with a whole
// kubelet.conf, and the newest replaces the others' file, so applying
// desired would silently undo the other's settings, or be undone by them.
// "" when there is no clash; an error when the objects or pools could not
// be read (a clash cannot be ruled out).
func Clash(a *catalog.Asset, desired *unstructured.Unstructured, rc *rendercontext.RenderContext) (string, error) {
	if a.Exclusive != catalog.ExclusivePool || desired == nil {
		return "", nil
	}
	if rc.KubeletConfigsErr != nil {
		return "", fmt.Errorf("cannot tell whether another %s selects the same pool: %w", desired.GetKind(), rc.KubeletConfigsErr)
	}
	pools := scopePools(desired, rc)
	var clashes []string
	for _, pool := range pools {
		var others []string
		for _, kc := range rc.KubeletConfigs {
			if kc.GetName() != desired.GetName() && selects(kc, poolLabelsOf(pool, rc)) {
				others = append(others, kc.GetName())
			}
		}
		if len(others) > 0 {
			sort.Strings(others)
			clashes = append(clashes, fmt.Sprintf("%s %s already selects pool %s", desired.GetKind(), strings.Join(others, ", "), pool))
		}
	}
	if len(clashes) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s, and MCO lets the newest KubeletConfig of a pool replace the others' kubelet.conf, "+
		"so %s is not applied. Keep yours: add KubeletConfig/%s to the HCO's %s. Or use the autopilot's: delete yours, then carry its settings over with a %s annotation on %s",
		strings.Join(clashes, "; "), desired.GetName(), desired.GetName(), annotations.DisabledResources, annotations.Patch, desired.GetName()), nil
}

// scopePools names the pools desired's machineConfigPoolSelector selects:
// among the live pools, or (offline, or no pool read) the pool its own
// pool label names.
func scopePools(desired *unstructured.Unstructured, rc *rendercontext.RenderContext) []string {
	var out []string
	for _, p := range rc.Pools {
		if selects(desired, labels.Set(p.GetLabels())) {
			out = append(out, p.GetName())
		}
	}
	if len(rc.Pools) == 0 {
		if pool := PoolOf(desired); pool != "" && selects(desired, poolLabelsOf(pool, rc)) {
			out = append(out, pool)
		}
	}
	return out
}

// poolLabelsOf is the pool's labels as MCO matches selectors against them:
// the live MachineConfigPool's, else (offline, or no pool read) the label
// every OpenShift pool carries.
func poolLabelsOf(pool string, rc *rendercontext.RenderContext) labels.Set {
	for _, p := range rc.Pools {
		if p.GetName() == pool {
			return labels.Set(p.GetLabels())
		}
	}
	return labels.Set{poolLabelPrefix + pool: ""}
}

// selects reports whether a KubeletConfig's machineConfigPoolSelector
// matches a pool's labels, as MCO reads it: no selector selects nothing, an
// empty one every pool.
func selects(kc *unstructured.Unstructured, pool labels.Set) bool {
	raw, found, _ := unstructured.NestedMap(kc.Object, "spec", "machineConfigPoolSelector")
	if !found {
		return false
	}
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &sel); err != nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	return err == nil && s.Matches(pool)
}
