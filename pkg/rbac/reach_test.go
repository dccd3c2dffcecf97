package rbac

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// TestReachCoversEveryRender: whatever the HCO and the nodes say (random
// switches, feature gates, KSM settings, PCI devices, CPU vendors,
// hardware and topology), every MachineConfig the catalog renders is one
// the policy's bounds admit, and every role, binding, SCC and workload
// renders what the policy pins. A template that grows a choice reach does
// not try fails here, not on a cluster as a refused write.
func TestReachCoversEveryRender(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	r := render.New(assets.FS)
	var switches, gates []string
	for i := range cat.Assets {
		reads := r.ReadsOf(cat.Assets[i].Path)
		for _, a := range reads.Args["switch"] {
			switches = append(switches, a...)
		}
		for _, a := range reads.Args["featureGate"] {
			gates = append(gates, a...)
		}
	}
	for _, f := range cat.Features {
		switches = append(switches, "enable-"+f.Name)
	}
	type bounded struct {
		asset  *catalog.Asset
		mc     *mcBounds
		kc     map[string]bool
		pinned *unstructured.Unstructured
	}
	var all []bounded
	for i := range cat.Assets {
		a := &cat.Assets[i]
		renders, err := reach(r, a, "openshift-cnv")
		if err != nil {
			t.Fatal(err)
		}
		if !contentBounded(renders[0]) {
			continue
		}
		b := bounded{asset: a, pinned: renders[0]}
		if renders[0].GetKind() == "MachineConfig" {
			b.mc = newMCBounds()
			for _, u := range renders {
				b.mc.add(u)
			}
		}
		if renders[0].GetKind() == "KubeletConfig" {
			b.kc = map[string]bool{}
			for _, u := range renders {
				for _, p := range kcSettings(u) {
					b.kc[p] = true
				}
			}
		}
		all = append(all, b)
	}
	if len(all) < 20 {
		t.Fatalf("only %d assets bounded by content: the catalog's MachineConfigs, roles and workloads are missing", len(all))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rendered := 0
	for i := 0; i < 300; i++ {
		rc := randomContext(rng, switches, gates)
		for _, b := range all {
			u, err := r.Render(b.asset.Path, rc, b.asset.Params, nil)
			if err != nil {
				continue // a context the template refuses writes nothing
			}
			rendered++
			if b.mc != nil {
				// An admin's KubeletConfig beside a drop-in: what it holds
				// is left out of it.
				held := map[string][]string{}
				for _, f := range kubeletFields {
					if rng.IntN(4) == 0 {
						held[f] = []string{"admin"}
					}
				}
				if _, err := kubeletdropin.LeaveOut(u, held); err != nil {
					t.Fatal(err)
				}
				if err := b.mc.admits(u); err != nil {
					t.Fatalf("asset %s under %s: the policy would refuse %v", b.asset.Name, describe(rc), err)
				}
				continue
			}
			if b.kc != nil {
				for _, p := range kcSettings(u) {
					if !b.kc[p] {
						t.Fatalf("asset %s under %s: the policy would refuse the setting %s", b.asset.Name, describe(rc), p)
					}
				}
				continue
			}
			if !sameAt(b.pinned, u, topFieldsOf(u), workloadKinds[u.GroupVersionKind().GroupKind()]) {
				t.Fatalf("asset %s under %s: renders other pinned content than the policy holds", b.asset.Name, describe(rc))
			}
		}
	}
	if rendered < 300*len(all)/2 {
		t.Fatalf("only %d of %d renders succeeded: the random contexts are not ones the catalog renders", rendered, 300*len(all))
	}
}

// kubeletFields are settings an admin's KubeletConfig may hold: the
// drop-in's and others.
var kubeletFields = []string{"maxPods", "nodeStatusMaxImages", "cpuManagerPolicy", "cpuManagerPolicyOptions", "reservedSystemCPUs",
	"systemReserved", "kubeReserved", "autoSizingReserved", "evictionHard", "memoryManagerPolicy", "reservedMemory",
	"topologyManagerPolicy", "featureGates", "podPidsLimit"}

func topFieldsOf(u *unstructured.Unstructured) []string {
	if t, ok := grantKinds[u.GroupVersionKind().GroupKind()]; ok {
		return topFields(t)
	}
	return nil
}

func randomContext(rng *rand.Rand, switches, gates []string) *rendercontext.RenderContext {
	ann := map[string]any{}
	for _, s := range switches {
		if rng.IntN(2) == 0 {
			ann[annotations.SwitchPrefix+s] = []string{"true", "false"}[rng.IntN(2)]
		}
	}
	var fg []any
	for _, g := range gates {
		if rng.IntN(2) == 0 {
			fg = append(fg, map[string]any{"name": g, "state": []string{"Enabled", "Disabled"}[rng.IntN(2)]})
		}
	}
	var devices []any
	for n := rng.IntN(4); n > 0; n-- {
		id := fmt.Sprintf("%04x:%04x", rng.IntN(0x10000), rng.IntN(0x10000))
		if rng.IntN(2) == 0 {
			id = strings.ToUpper(id)
		}
		devices = append(devices, map[string]any{"pciDeviceSelector": id, "resourceName": "example.com/d", "externalResourceProvider": rng.IntN(4) == 0})
	}
	virt := map[string]any{"permittedHostDevices": map[string]any{"pciHostDevices": devices}}
	if rng.IntN(2) == 0 {
		virt["ksmConfiguration"] = map[string]any{"nodeLabelSelector": map[string]any{}}
	}
	spec := map[string]any{"virtualization": virt}
	if fg != nil {
		spec["featureGates"] = fg
	}
	hco := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": spec}}
	hco.SetGroupVersionKind(rendercontext.HCOGVK)
	// Random nodes: each a worker, a master, or both, with random
	// hardware.
	var nodes []corev1.Node
	features := []string{"memory-numa", "iommu-enabled", "network-sriov.capable", "pci-0300_10de.present", "pci-0200_8086.present", "usb-ff_0bda_8153.present"}
	for n := rng.IntN(5); n >= 0; n-- {
		l := map[string]string{}
		switch rng.IntN(3) {
		case 0:
			l[labelWorker] = ""
		case 1:
			l[labelMaster], l[controlPlane] = "", ""
		default:
			l[labelMaster], l[labelWorker] = "", ""
		}
		if v := rng.IntN(4); v > 0 {
			l[vendorLabel] = []string{"", "GenuineIntel", "AuthenticAMD", "Hygon"}[v]
		}
		for _, f := range features {
			if rng.IntN(2) == 0 {
				l[nfd+f] = "true"
			}
		}
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", n), Labels: l}})
	}
	facts := rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, AssumeAllKinds: true, Nodes: nodes,
		Observed: rendercontext.Observed{Images: map[string]string{"kubevirt-metrics-exporter": "image.invalid/kubevirt-metrics-exporter"}}}
	if rng.IntN(2) == 0 {
		facts.Scheduler = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"mastersSchedulable": rng.IntN(2) == 0}}}
	}
	rc := rendercontext.New(facts)
	return rc
}

func describe(rc *rendercontext.RenderContext) string {
	return fmt.Sprintf("HCO %v, hardware %+v, topology %+v", rc.HCO, rc.Hardware, rc.Topology)
}
