package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/assets"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
)

// factLabels are node labels the catalog's detectors and roles read, and
// some they do not; a generated cluster draws from them.
var factLabels = []string{
	"node-role.kubernetes.io/worker", "node-role.kubernetes.io/master", "node-role.kubernetes.io/infra",
	"feature.node.kubernetes.io/memory-numa", "feature.node.kubernetes.io/iommu-enabled",
	"feature.node.kubernetes.io/pci-10de.present", "feature.node.kubernetes.io/pci-0300_1002.present",
	"feature.node.kubernetes.io/usb-ef_0b95.present", "feature.node.kubernetes.io/network-sriov.capable",
	"feature.node.kubernetes.io/cpu-model.vendor_id", "feature.node.kubernetes.io/kernel-version.major",
	"topology.kubernetes.io/zone",
}

func genNode(r *rand.Rand, i int) corev1.Node {
	labels := map[string]string{}
	for _, l := range factLabels {
		if r.IntN(3) == 0 {
			labels[l] = "true"
		}
	}
	if r.IntN(2) == 0 {
		labels["node-role.kubernetes.io/worker"] = ""
	}
	if v, ok := labels["feature.node.kubernetes.io/cpu-model.vendor_id"]; ok && v == "true" {
		labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = []string{"Intel", "AMD"}[r.IntN(2)]
	}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: labels}}
	if r.IntN(4) == 0 {
		n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	}
	return n
}

// mutate changes one fact of a generated cluster: a node joins or leaves,
// or one label of one node flips.
func mutate(r *rand.Rand, nodes []corev1.Node) ([]corev1.Node, string) {
	out := make([]corev1.Node, len(nodes))
	for i := range nodes {
		out[i] = *nodes[i].DeepCopy()
	}
	switch k := r.IntN(4); {
	case k == 0 || len(out) == 0:
		return append(out, genNode(r, 100+len(out))), "a node joins"
	case k == 1 && len(out) > 1:
		i := r.IntN(len(out))
		return append(out[:i], out[i+1:]...), "a node leaves"
	default:
		n, l := &out[r.IntN(len(out))], factLabels[r.IntN(len(factLabels))]
		if _, ok := n.Labels[l]; ok {
			delete(n.Labels, l)
		} else {
			n.Labels[l] = "true"
		}
		return out, "label " + l + " flips on " + n.Name
	}
}

// allSwitchesOn is an HCO annotation map that turns every opt-in switch
// of the catalog on, so every template renders its content.
func allSwitchesOn(cat *catalog.Catalog) map[string]string {
	ann := map[string]string{}
	for _, a := range cat.Assets {
		for _, c := range a.Conditions {
			if c.Type == catalog.CondAnnotation && c.Value != nil && *c.Value == "true" {
				ann[c.Key] = "true"
			}
		}
	}
	return ann
}

func factContext(ann map[string]string, nodes []corev1.Node) *rendercontext.RenderContext {
	hco := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"featureGates": []any{map[string]any{"name": "CPUManager"}}}}}
	hco.SetAPIVersion("hco.kubevirt.io/v1")
	hco.SetKind("HyperConverged")
	hco.SetName("kubevirt-hyperconverged")
	hco.SetAnnotations(ann)
	rc := rendercontext.New(rendercontext.Facts{Namespace: "openshift-cnv", HCO: hco, Nodes: nodes})
	rc.AssumeAllKinds = true
	return rc
}

// The facts print covers what an object renders from, and only that:
// over generated clusters and one changed fact each (a node joining or
// leaving, a label flipping), whenever an asset's print stays the same
// its verdict and object stay the same too (nothing it reads escapes the
// print); and a fact no asset reads (a node joining with no detected
// hardware; a label nothing reads) leaves the prints of the assets that do
// not read the topology as they were, so a write of theirs never waits
// for it.
func TestFactPrintCoversWhatTheObjectRendersFrom(t *testing.T) {
	cat, err := catalog.Load(assets.FS, assets.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Evaluator{Renderer: render.New(assets.FS)}
	ann := allSwitchesOn(cat)
	type seen struct {
		verdict       engine.Verdict
		facts, object string
	}
	judge := func(rc *rendercontext.RenderContext) map[string]seen {
		out := map[string]seen{}
		for i := range cat.Assets {
			a := &cat.Assets[i]
			d := ev.Evaluate(context.Background(), a, rc, liveMap{})
			if d.FactPrint == "" {
				continue // not an asset that settles
			}
			out[a.Name] = seen{d.Verdict, d.FactPrint, d.ObjectPrint}
		}
		return out
	}
	r := rand.New(rand.NewPCG(26, 5))
	unchangedPrints, checked := 0, 0
	for range 150 {
		var nodes []corev1.Node
		for i := range 1 + r.IntN(5) {
			nodes = append(nodes, genNode(r, i))
		}
		after, what := mutate(r, nodes)
		before, now := judge(factContext(ann, nodes)), judge(factContext(ann, after))
		for name, b := range before {
			n := now[name]
			checked++
			if b.facts != n.facts {
				continue
			}
			unchangedPrints++
			if b.verdict != n.verdict || b.object != n.object {
				t.Errorf("%s: %s left its facts print %s, yet its verdict or object changed (%s %s → %s %s): the print misses a fact it renders from",
					name, what, b.facts, b.verdict, b.object, n.verdict, n.object)
			}
		}
	}
	if unchangedPrints == 0 || unchangedPrints == checked {
		t.Fatalf("the generated changes never (or always) kept a print: %d of %d", unchangedPrints, checked)
	}

	// The case: an NFD label on one worker that no worker
	// MachineConfig without hardware reads, and a worker joining, change
	// nothing for the PSI MachineConfig; a CPU vendor appearing changes
	// the IOMMU MachineConfig's print, which reads it.
	worker := func(name string, labels ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
		for _, l := range labels {
			n.Labels[l] = "true"
		}
		return n
	}
	base := judge(factContext(ann, []corev1.Node{worker("a"), worker("b")}))
	relabelled := judge(factContext(ann, []corev1.Node{worker("a", "feature.node.kubernetes.io/pci-10de.present"), worker("b")}))
	joined := judge(factContext(ann, []corev1.Node{worker("a"), worker("b"), worker("c")}))
	if base["psi-enable"].facts != settle.NoFacts || relabelled["psi-enable"] != base["psi-enable"] || joined["psi-enable"] != base["psi-enable"] {
		t.Errorf("psi-enable reads no fact: %+v, relabelled %+v, joined %+v", base["psi-enable"], relabelled["psi-enable"], joined["psi-enable"])
	}
	amd := worker("a", "feature.node.kubernetes.io/iommu-enabled")
	amd.Labels["feature.node.kubernetes.io/cpu-model.vendor_id"] = "AMD"
	withIOMMU := judge(factContext(ann, []corev1.Node{worker("a", "feature.node.kubernetes.io/iommu-enabled"), worker("b")}))
	withAMD := judge(factContext(ann, []corev1.Node{amd, worker("b")}))
	for name, s := range withIOMMU {
		if s.verdict == engine.VerdictIncluded && s.object != withAMD[name].object && s.facts == withAMD[name].facts {
			t.Errorf("%s: a CPU vendor appearing changes the object but not the print", name)
		}
	}
}
