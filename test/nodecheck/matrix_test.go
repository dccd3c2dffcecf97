// Package nodecheck has the node's own software judge every node-level
// object the autopilot renders (every MachineConfig and KubeletConfig
// asset), across a matrix of inputs and OpenShift releases: Ignition's
// parser and validator and MCO's render-time rules (ignition_test.go,
// mco_test.go), systemd-analyze verify, bash -n and shellcheck and the
// other payloads' parsers (units_test.go, payloads_test.go), the kubelet's
// own configuration checks through hack/kubelet-check (kubelet_test.go),
// and a comparison of the protections a node keeps with and without the
// autopilot's kubelet settings (protection_test.go). Facts about MCO and the
// kubelet come from their sources, each cited where it is used.
package nodecheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// nodeKinds are the objects a node's software consumes.
var nodeKinds = map[string]bool{"MachineConfig": true, "KubeletConfig": true}

// hcoInput is the HyperConverged a render starts from.
type hcoInput struct {
	name        string
	annotations map[string]string
	spec        map[string]any
}

// topology is the cluster shape: which nodes carry which roles.
type topology struct {
	name string
	// controlPlane is Infrastructure status.controlPlaneTopology.
	controlPlane string
	masters      int
	workers      int
	// mastersSchedulable is Scheduler spec.mastersSchedulable: compact
	// and single-node clusters run workloads on masters.
	mastersSchedulable bool
}

var topologies = []topology{
	{name: "workers", controlPlane: "HighlyAvailable", masters: 3, workers: 2},
	{name: "compact", controlPlane: "HighlyAvailable", masters: 3, mastersSchedulable: true},
	{name: "sno", controlPlane: "SingleReplica", masters: 1, mastersSchedulable: true},
}

// hardware is what Node Feature Discovery labels the nodes with, and the
// machine the kubelet model starts on.
type hardware struct {
	name   string
	labels map[string]string
	// numa: NUMA nodes of the machine model (1 without the NUMA label).
	numa int
}

const nfd = "feature.node.kubernetes.io/"

var hardwareSets = []hardware{
	{name: "plain", numa: 1},
	{name: "intel-numa-iommu-pci-usb", numa: 2, labels: map[string]string{
		nfd + "memory-numa": "true", nfd + "iommu-enabled": "true", nfd + "cpu-model.vendor_id": "Intel",
		nfd + "pci-10de.present": "true", nfd + "usb-ef_0b95_1790.present": "true"}},
	{name: "amd-numa-iommu-gpu", numa: 2, labels: map[string]string{
		nfd + "memory-numa": "true", nfd + "iommu-enabled": "true", nfd + "cpu-model.vendor_id": "AMD",
		nfd + "pci-0300_1002.present": "true"}},
}

// permittedDevices: one device bound to vfio-pci, one served by an
// external device plugin (left to its driver), one disabled.
var permittedDevices = map[string]any{"pciHostDevices": []any{
	map[string]any{"pciDeviceSelector": "10DE:1EB8", "resourceName": "nvidia.com/TU104GL_Tesla_T4"},
	map[string]any{"pciDeviceSelector": "8086:0D5C", "resourceName": "intel.com/qat", "externalResourceProvider": true},
	map[string]any{"pciDeviceSelector": "1002:67DF", "resourceName": "amd.com/rx480", "disabled": true},
}}

var cpuManagerGate = []any{map[string]any{"name": "CPUManager", "state": "Enabled"}}

// hcoInputs are the HCO variants: no switch, every switch with and without
// the CPUManager gate and with no host device permitted, KSM run by the HCO
// (higher density) beside the node-level KSM and THP switches, and each
// switch alone.
func hcoInputs(cat *catalog.Catalog) []hcoInput {
	var switches []string
	for _, f := range cat.Features {
		if f.Switch != "" {
			switches = append(switches, f.Switch)
		}
	}
	sort.Strings(switches)
	on := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[annotations.SwitchPrefix+n] = "true"
		}
		return m
	}
	devices := map[string]any{"virtualization": map[string]any{"permittedHostDevices": permittedDevices}}
	all := []hcoInput{
		{name: "no-switch"},
		{name: "cpumanager-only", spec: map[string]any{"featureGates": cpuManagerGate}},
		{name: "all-switches", annotations: on(switches...), spec: map[string]any{"featureGates": cpuManagerGate, "virtualization": devices["virtualization"]}},
		{name: "all-switches-no-cpumanager", annotations: on(switches...), spec: devices},
		{name: "node-tuning-ksm-by-hco", annotations: on("enable-higher-density", "enable-ksm-zero-only", "enable-thp-tuning")},
		// Every switch with no host device permitted: the memory split
		// (thp-kernelcore) holds only then.
		{name: "all-switches-no-devices", annotations: on(switches...), spec: map[string]any{"featureGates": cpuManagerGate}},
	}
	for _, s := range switches {
		all = append(all, hcoInput{name: "only-" + s, annotations: on(s), spec: devices})
	}
	return all
}

// renderCase is one cell of the matrix.
type renderCase struct {
	topo topology
	hw   hardware
	// swap: the workers have a swap partition labelled OCPSWAP and report
	// swap (status.nodeInfo.swap), as a node does once it is on.
	swap bool
	hco  hcoInput
	// era is the release whose kubelet.service MCO renders for each role
	// (MachineConfigs 01-<role>-kubelet): which pools read drop-ins.
	era release
	// admin is an admin's KubeletConfig on the worker pool, or none.
	admin adminKC
}

func (c renderCase) String() string {
	s := fmt.Sprintf("%s/%s/swap=%t/%s/units of %s", c.topo.name, c.hw.name, c.swap, c.hco.name, c.era.name)
	if c.admin.name != "" {
		s += "/admin KubeletConfig " + c.admin.name
	}
	return s
}

// eras are one release per distinct answer to "does the kubelet read the
// drop-in folder" for workers and masters (releases.configDir): before
// 4.21 neither, 4.21 and 4.22 workers, from 5.0 both.
func eras() []release {
	var out []release
	seen := map[[2]bool]bool{}
	for _, r := range releases {
		k := [2]bool{r.configDir("worker"), r.configDir("master")}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// sameEra: r's kubelet units read drop-ins where era's do.
func sameEra(r, era release) bool {
	return r.configDir("worker") == era.configDir("worker") && r.configDir("master") == era.configDir("master")
}

// adminKC is a KubeletConfig an admin keeps on the worker pool, held out
// from the autopilot's own tests: shapes production clusters carry.
type adminKC struct {
	name string
	spec map[string]any // the KubeletConfig's spec beside its selector
}

var adminKCs = []adminKC{
	{name: "density-and-gc", spec: map[string]any{"kubeletConfig": map[string]any{
		"maxPods": int64(350), "podPidsLimit": int64(8192), "imageGCHighThresholdPercent": int64(80), "imageGCLowThresholdPercent": int64(70)}}},
	{name: "auto-sizing-and-eviction", spec: map[string]any{"autoSizingReserved": true, "kubeletConfig": map[string]any{
		"evictionHard": map[string]any{"memory.available": "500Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}}}},
	{name: "reserved-and-topology", spec: map[string]any{"kubeletConfig": map[string]any{
		"systemReserved": map[string]any{"memory": "3Gi", "cpu": "1"}, "topologyManagerPolicy": "single-numa-node", "maxPods": int64(200)}}},
}

// cases is the matrix: every HCO input on every topology and hardware set,
// with and without swap; each switch alone only on two cells, where it can
// turn something on (its own combinations are covered by all-switches).
func cases(cat *catalog.Catalog) []renderCase {
	var out []renderCase
	es := eras()
	oldest, newest := es[0], es[len(es)-1]
	for _, h := range hcoInputs(cat) {
		for _, topo := range topologies {
			for _, hw := range hardwareSets {
				for _, swap := range []bool{false, true} {
					// A switch alone: on the richest hardware, with swap, not SNO.
					single := strings.HasPrefix(h.name, "only-")
					if single && (hw.name != hardwareSets[1].name || !swap || topo.name == "sno") {
						continue
					}
					// Every cell with the kubelet units of the first and
					// the last era (a KubeletConfig per pool; drop-ins on
					// every pool).
					for _, era := range []release{oldest, newest} {
						out = append(out, renderCase{topo: topo, hw: hw, swap: swap, hco: h, era: era})
					}
					// Each era, and each admin KubeletConfig on the worker
					// pool, on the inputs that change the kubelet settings.
					if single || h.name == "node-tuning-ksm-by-hco" || h.name == "all-switches-no-devices" || hw.name == hardwareSets[2].name || swap {
						continue
					}
					for _, era := range es {
						for _, adm := range append([]adminKC{{}}, adminKCs...) {
							if adm.name == "" && (era.name == oldest.name || era.name == newest.name) {
								continue // above
							}
							out = append(out, renderCase{topo: topo, hw: hw, swap: swap, hco: h, era: era, admin: adm})
						}
					}
				}
			}
		}
	}
	return out
}

// nodeObject is one rendered node-level object and the cells that render it.
type nodeObject struct {
	Asset string
	Kind  string
	Name  string
	Pool  string
	Obj   *unstructured.Unstructured
	JSON  []byte
	Cases []string
	key   string // asset, name, labels and spec: what a node sees
}

// poolSet is what the autopilot renders for one pool in one cell.
type poolSet struct {
	Pool    string
	Objects []*nodeObject
	// Swap: the pool's nodes have an OCPSWAP partition.
	Swap  bool
	NUMA  int
	Cases []string
	// Era: rendered with this release's kubelet units; judged on every
	// release of the same era (sameEra).
	Era release
	// Admin: an admin's KubeletConfig on the pool, MCO merging it too.
	Admin *adminKC
}

// rendered holds every distinct node object and pool set of the matrix.
type rendered struct {
	Objects []*nodeObject // distinct, sorted by asset then name
	Pools   []*poolSet    // distinct, sorted by pool then key
}

var (
	renderOnce sync.Once
	renderOut  *rendered
	renderErr  error
)

// renderAll renders the matrix once per test binary, through the same
// code path as the render CLI (engine.Plan with the Preview step over an
// offline context, pkg/cli runRender).
func renderAll(t *testing.T) *rendered {
	t.Helper()
	renderOnce.Do(func() { renderOut, renderErr = doRender() })
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return renderOut
}

func doRender() (*rendered, error) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		return nil, err
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS, render.OneShot())}
	objs := map[string]*nodeObject{}
	pools := map[string]*poolSet{}
	seenAsset := map[string]bool{}
	for _, c := range cases(cat) {
		f := facts(c)
		// Without CRDs every kind counts as installed, as render without --crds.
		f.AssumeAllKinds = true
		rc := rendercontext.New(f)
		eval := ev.Preview(context.Background(), cat, rc, preview.Static{f.HCO})
		byPool := map[string][]*nodeObject{}
		for _, d := range eval.Decisions {
			if d.Desired == nil || !nodeKinds[d.Desired.GetKind()] {
				continue
			}
			js, err := json.Marshal(d.Desired.Object)
			if err != nil {
				return nil, err
			}
			// Objects that differ only in annotations (the facts print)
			// are one object to a node.
			seen, err := json.Marshal([]any{d.Desired.GetName(), d.Desired.GetLabels(), d.Desired.Object["spec"]})
			if err != nil {
				return nil, err
			}
			key := d.Asset.Name + "\x00" + string(seen)
			o := objs[key]
			if o == nil {
				o = &nodeObject{key: key, Asset: d.Asset.Name, Kind: d.Desired.GetKind(), Name: d.Desired.GetName(), Pool: engine.PoolOf(d.Desired), Obj: d.Desired, JSON: js}
				objs[key] = o
			}
			o.Cases = append(o.Cases, c.String())
			seenAsset[d.Asset.Name] = true
			byPool[o.Pool] = append(byPool[o.Pool], o)
		}
		for _, pool := range []string{"master", "worker"} {
			list := byPool[pool]
			sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
			// Only workers report swap: masters in compact clusters are
			// in the master pool, which no swap MachineConfig targets.
			swap := c.swap && pool == "worker" && c.topo.workers > 0
			// The admin's KubeletConfig selects the worker pool (and, MCO
			// rendering it for the worker role, compact masters do not
			// take it: they are the master pool).
			var admin *adminKC
			if c.admin.name != "" && pool == "worker" {
				admin = &c.admin
			}
			h := sha256.New()
			fmt.Fprintf(h, "%s %t %d %s %s\n", pool, swap, c.hw.numa, c.era.name, c.admin.name)
			for _, o := range list {
				h.Write([]byte(o.key))
			}
			key := hex.EncodeToString(h.Sum(nil))
			p := pools[key]
			if p == nil {
				p = &poolSet{Pool: pool, Objects: list, Swap: swap, NUMA: c.hw.numa, Era: c.era, Admin: admin}
				pools[key] = p
			}
			p.Cases = append(p.Cases, c.String())
		}
	}
	out := &rendered{}
	for _, o := range objs {
		out.Objects = append(out.Objects, o)
	}
	sort.Slice(out.Objects, func(i, j int) bool {
		a, b := out.Objects[i], out.Objects[j]
		return a.key < b.key
	})
	keys := make([]string, 0, len(pools))
	for k := range pools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Pools = append(out.Pools, pools[k])
	}
	// Every node-level asset must be judged at least once.
	for _, a := range cat.Assets {
		if nodeKinds[a.Component] && !seenAsset[a.Name] {
			return nil, fmt.Errorf("asset %s (%s) never rendered in the matrix: add an input that turns it on", a.Name, a.Component)
		}
	}
	return out, nil
}

// facts are the offline facts of one cell, as render --hco-file would read them.
func facts(c renderCase) rendercontext.Facts {
	hco := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	hco.SetGroupVersionKind(rendercontext.HCOGVK)
	hco.SetNamespace("openshift-cnv")
	hco.SetName(rendercontext.HCOName)
	hco.SetAnnotations(c.hco.annotations)
	for k, v := range c.hco.spec {
		hco.Object["spec"].(map[string]any)[k] = v
	}
	infra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": map[string]any{"name": "cluster"},
		"status": map[string]any{"controlPlaneTopology": c.topo.controlPlane, "infrastructureTopology": c.topo.controlPlane,
			"platformStatus": map[string]any{"type": "BareMetal"}},
	}}
	sched := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1", "kind": "Scheduler", "metadata": map[string]any{"name": "cluster"},
		"spec": map[string]any{"mastersSchedulable": c.topo.mastersSchedulable},
	}}
	var nodes []corev1.Node
	add := func(name string, roles ...string) {
		l := map[string]string{}
		for k, v := range c.hw.labels {
			l[k] = v
		}
		for _, r := range roles {
			l["node-role.kubernetes.io/"+r] = ""
		}
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
		_, worker := l["node-role.kubernetes.io/worker"]
		if c.swap && worker && len(roles) == 1 {
			capacity := int64(16 << 30)
			n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &capacity}
		}
		nodes = append(nodes, n)
	}
	for i := 0; i < c.topo.masters; i++ {
		if c.topo.mastersSchedulable {
			add(fmt.Sprintf("m%d", i), "master", "worker")
		} else {
			add(fmt.Sprintf("m%d", i), "master")
		}
	}
	for i := 0; i < c.topo.workers; i++ {
		add(fmt.Sprintf("w%d", i), "worker")
	}
	f := rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, Infrastructure: infra, Scheduler: sched, Nodes: nodes}
	f.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{}
	for _, role := range []string{"master", "worker"} {
		ref := catalog.KubeletUnitRead(role)
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"config": map[string]any{"systemd": map[string]any{"units": []any{
			map[string]any{"name": "kubelet.service", "enabled": true, "contents": c.era.kubeletUnit(role)},
		}}}}}}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		u.SetName(ref.Name)
		f.Objects[rendercontext.ObjectKey{GVK: rendercontext.MachineConfigGVK, Name: ref.Name}] = u
	}
	if c.admin.name != "" {
		spec := map[string]any{"machineConfigPoolSelector": map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/worker": ""}}}
		for k, v := range c.admin.spec {
			spec[k] = v
		}
		kc := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		kc.SetGroupVersionKind(rendercontext.KubeletConfigGVK)
		kc.SetName(c.admin.name)
		f.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{rendercontext.KubeletConfigGVK: {kc}}
	}
	return f
}
