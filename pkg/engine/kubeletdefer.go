package engine

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// leaveToKubeletConfigs leaves out of a rendered MachineConfig's kubelet
// drop-ins (and node sizing file) every setting that a KubeletConfig sets
// for a pool the MachineConfig reaches, with the settings that only work
// beside it; the KubeletConfig this asset replaces does not count. A
// role's MachineConfig reaches every custom pool taking the role's, so one
// such pool's KubeletConfig trims it for all. A drop-in is merged over
// kubelet.conf, which such a KubeletConfig writes, so without this the
// drop-in would silently win over the admin's value. It returns what it
// left out; the admin's value stays in effect. Pools or KubeletConfigs
// that cannot be read are an error: what the admin holds cannot be told.
func leaveToKubeletConfigs(a *catalog.Asset, mc *unstructured.Unstructured, rc *rendercontext.RenderContext) ([]Deferral, error) {
	if mc.GetKind() != "MachineConfig" {
		return nil, nil
	}
	held, err := kubeletdropin.MayBeHeld(mc)
	if err != nil {
		return nil, fmt.Errorf("read the kubelet drop-ins of MachineConfig %s: %w", mc.GetName(), err)
	}
	if !held {
		return nil, nil // nothing a KubeletConfig may set (the swap drop-in)
	}
	if err := rc.PeersErr[rendercontext.KubeletConfigGVK]; err != nil {
		return nil, fmt.Errorf("cannot tell which kubelet settings an admin's KubeletConfig holds: %w", err)
	}
	if rc.PoolsErr != nil {
		return nil, fmt.Errorf("cannot tell which pools MachineConfig %s reaches: %w", mc.GetName(), rc.PoolsErr)
	}
	ours := rc.PoolsReached(mc)
	if len(rc.Pools) == 0 {
		ours = []string{mc.GetLabels()[mcRoleLabel]}
	}
	taken := map[string][]string{}
	for _, kc := range rc.Peers[rendercontext.KubeletConfigGVK] {
		if !kc.GetDeletionTimestamp().IsZero() {
			continue // going: MCO removes what it generated from it
		}
		if a.Replaces != "" && annotations.Labelled(kc.GetLabels()) && kc.GetAnnotations()[annotations.Asset] == a.Replaces {
			// The autopilot's KubeletConfig this MachineConfig replaces:
			// deleted with its write, or holding it as a Conflict. Any
			// other KubeletConfig, an old one of the autopilot's kept by a
			// tombstone's guard included, is applied by MCO and holds.
			continue
		}
		theirs := rc.PoolsReached(kc)
		if len(rc.Pools) == 0 {
			if theirs, err = poolsHeld(kc, rc); err != nil {
				return nil, err
			}
		}
		if !slices.ContainsFunc(theirs, func(p string) bool { return slices.Contains(ours, p) }) {
			continue
		}
		for _, f := range kubeletdropin.Fields(kc) {
			taken[f] = append(taken[f], kubeletConfigKey+kc.GetName())
		}
	}
	left, err := kubeletdropin.LeaveOut(mc, taken)
	if err != nil {
		return nil, fmt.Errorf("leave the admin's kubelet settings out of MachineConfig %s: %w", mc.GetName(), err)
	}
	out := make([]Deferral, len(left))
	for i, l := range left {
		out[i] = Deferral{Field: "kubelet " + l.Field, Managers: l.KubeletConfigs, Owner: OwnerKubeletConfig}
	}
	return out, nil
}

// kubeletConfigKey prefixes a KubeletConfig's ObjectKey.
var kubeletConfigKey = rendercontext.KubeletConfigGVK.Kind + "." + rendercontext.KubeletConfigGVK.Group + "/"
