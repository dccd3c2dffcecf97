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
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// KubeletClash explains why the autopilot's KubeletConfig ours must not be
// applied: another KubeletConfig selects the same pool (an admin's, or an
// old one of the autopilot's that is kept). MCO renders every KubeletConfig
// of a pool into its own MachineConfig with a whole kubelet.conf, and the
// newest replaces the others' file: applying ours would silently undo the
// other's settings, or be undone by them. "" when there is no clash or ours
// is not a KubeletConfig; an error when the KubeletConfigs or pools could
// not be read (a clash cannot be ruled out).
func KubeletClash(ours *unstructured.Unstructured, rc *rendercontext.RenderContext) (string, error) {
	if ours == nil || ours.GroupVersionKind() != rendercontext.KubeletConfigGVK {
		return "", nil
	}
	pool := PoolOf(ours)
	if pool == "" {
		return "", nil
	}
	if rc.KubeletConfigsErr != nil {
		return "", fmt.Errorf("cannot tell whether another KubeletConfig selects pool %s: %w", pool, rc.KubeletConfigsErr)
	}
	poolLabels := poolLabelsOf(pool, rc)
	var others []string
	for _, kc := range rc.KubeletConfigs {
		if kc.GetName() == ours.GetName() {
			continue
		}
		if selects(kc, poolLabels) {
			others = append(others, kc.GetName())
		}
	}
	if len(others) == 0 {
		return "", nil
	}
	sort.Strings(others)
	return fmt.Sprintf("KubeletConfig %s already selects pool %s, and MCO lets the newest KubeletConfig of a pool replace the others' kubelet.conf, "+
		"so %s is not applied. Keep yours: add KubeletConfig/%s to the HCO's %s. Or use the autopilot's: delete yours, then carry its settings over with a %s annotation on %s",
		strings.Join(others, ", "), pool, ours.GetName(), ours.GetName(), annotations.DisabledResources, annotations.Patch, ours.GetName()), nil
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
