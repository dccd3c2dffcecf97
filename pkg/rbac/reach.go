package rbac

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/render"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// What an HCO editor chooses freely and a template copies into a
// MachineConfig's kernel arguments, entered into the render as a sentinel
// and turned back into its grammar in the policy: the PCI ids vfio-pci
// binds (annotations.ParsePCIID checks each and lower-cases it; the
// template joins them with commas).
const (
	pciSentinel = "ffff:fffe"
	pciIDs      = `[0-9a-f]{4}:[0-9a-f]{4}(,[0-9a-f]{4}:[0-9a-f]{4})*`
)

// maxChoices bounds the switches and feature gates one template may read
// for reach to try every combination of them.
const maxChoices = 8

// reach renders asset a under every combination of the choices its
// template reads (each switch and feature gate on and off, the KSM
// configuration set and not), on nodes of every CPU vendor and hardware in
// both pools, one PCI device listed: every kernel argument, file and unit
// it can render.
// TestReachCoversEveryRender renders random contexts against it.
func reach(r *render.Renderer, a *catalog.Asset, namespace string) ([]*unstructured.Unstructured, error) {
	// Without an HCO, as every generator renders: the object's name (a
	// render that waits for the cluster is named by its head). Only what
	// the policy bounds by content is rendered further.
	images := map[string]string{}
	for _, c := range a.Conditions {
		if c.Type == catalog.CondImage {
			images[c.Name] = "image.invalid/" + c.Name
		}
	}
	base := &rendercontext.RenderContext{Namespace: namespace, AssumeAllKinds: true}
	base.Images = images
	head, err := r.RenderOrHead(a.Path, base, a.Params)
	if err != nil {
		return nil, fmt.Errorf("asset %s: %w", a.Name, err)
	}
	if !contentBounded(head) {
		return []*unstructured.Unstructured{head}, nil
	}
	reads := r.ReadsOf(a.Path)
	type choice struct {
		gate bool
		name string
	}
	var choices []choice
	for _, f := range []string{"switch", "featureGate"} {
		seen := map[string]bool{}
		for _, args := range reads.Args[f] {
			if len(args) == 1 && !seen[args[0]] {
				seen[args[0]] = true
				choices = append(choices, choice{gate: f == "featureGate", name: args[0]})
			}
		}
	}
	if len(choices) > maxChoices {
		return nil, fmt.Errorf("asset %s: its template reads %d switches and feature gates, more than the admission policy can try (%d)", a.Name, len(choices), maxChoices)
	}
	out := []*unstructured.Unstructured{head}
	seen := map[string]bool{}
	for mask := 0; mask < 1<<len(choices); mask++ {
		for _, ksm := range []bool{false, true} {
			ann := map[string]any{}
			var gates []any
			for i, c := range choices {
				if mask&(1<<i) == 0 {
					continue
				}
				if c.gate {
					gates = append(gates, map[string]any{"name": c.name, "state": "Enabled"})
				} else {
					ann[annotations.SwitchPrefix+c.name] = "true"
				}
			}
			spec := map[string]any{"virtualization": map[string]any{"permittedHostDevices": map[string]any{
				"pciHostDevices": []any{map[string]any{"pciDeviceSelector": pciSentinel, "resourceName": "example.com/device"}}}}}
			if ksm {
				spec["virtualization"].(map[string]any)["ksmConfiguration"] = map[string]any{"nodeLabelSelector": map[string]any{}}
			}
			if gates != nil {
				spec["featureGates"] = gates
			}
			hco := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": spec}}
			hco.SetGroupVersionKind(rendercontext.HCOGVK)
			rc := rendercontext.New(rendercontext.Facts{
				Namespace: namespace, HCO: hco, AssumeAllKinds: true,
				Nodes:    everyNode(),
				Observed: rendercontext.Observed{Images: images},
			})
			u, err := r.Render(a.Path, rc, a.Params, nil)
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", a.Name, err)
			}
			if seen[jsonKey(u.Object)] {
				continue
			}
			seen[jsonKey(u.Object)] = true
			// A kubelet drop-in leaves out what an admin's KubeletConfig
			// holds: every form it can take.
			forms, err := kubeletdropin.Variants(u)
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", a.Name, err)
			}
			out = append(out, forms...)
		}
	}
	return out, nil
}

// mcBounds is what a MachineConfig of the catalog may hold, over every
// render reach finds: its pool role, its kernel arguments (anchored
// regular expressions), and each file and unit whole (mode, contents,
// drop-ins: what Ignition writes), by their JSON.
type mcBounds struct {
	role                    string
	args                    map[string]bool
	files, units, ignitions map[string]any
}

func newMCBounds() *mcBounds {
	return &mcBounds{args: map[string]bool{}, files: map[string]any{}, units: map[string]any{}, ignitions: map[string]any{}}
}

// add widens b to admit u.
func (b *mcBounds) add(u *unstructured.Unstructured) {
	b.role = u.GetLabels()[mcRoleLabel]
	args, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "kernelArguments")
	for _, a := range args {
		b.args[argPattern(a)] = true
	}
	for _, f := range entries(u, "storage", "files") {
		b.files[jsonKey(f)] = f
	}
	for _, x := range entries(u, "systemd", "units") {
		b.units[jsonKey(x)] = x
	}
	if ign, ok, _ := unstructured.NestedMap(u.Object, "spec", "config", "ignition"); ok {
		b.ignitions[jsonKey(ign)] = ign
	}
}

// admits: u holds nothing b does not (what the policy checks of a write
// that changes everything).
func (b *mcBounds) admits(u *unstructured.Unstructured) error {
	if role := u.GetLabels()[mcRoleLabel]; role != b.role {
		return fmt.Errorf("role %q, not %q", role, b.role)
	}
	args, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "kernelArguments")
	for _, a := range args {
		ok := false
		for p := range b.args {
			ok = ok || regexp.MustCompile(p).MatchString(a)
		}
		if !ok {
			return fmt.Errorf("kernel argument %q", a)
		}
	}
	for _, f := range entries(u, "storage", "files") {
		if _, ok := b.files[jsonKey(f)]; !ok {
			return fmt.Errorf("file %s", f["path"])
		}
	}
	for _, x := range entries(u, "systemd", "units") {
		if _, ok := b.units[jsonKey(x)]; !ok {
			return fmt.Errorf("unit %s", x["name"])
		}
	}
	return nil
}

// argPattern is an anchored expression matching a rendered kernel
// argument, with the sentinel of a free input turned back into its grammar.
func argPattern(arg string) string {
	return "^" + strings.ReplaceAll(regexp.QuoteMeta(arg), regexp.QuoteMeta(pciSentinel), pciIDs) + "$"
}

func jsonKey(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// entries is the list at spec.config.<path> of a MachineConfig.
func entries(u *unstructured.Unstructured, path ...string) []map[string]any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, append([]string{"spec", "config"}, path...)...)
	return maps(v)
}

func maps(v any) []map[string]any {
	s, _ := v.([]any)
	var out []map[string]any
	for _, x := range s {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// celEntries is a CEL list of {"mc": name, "<field>": entry} for each
// entry of set, sorted.
func celEntries(name, field string, set map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(set) {
		out = append(out, celValue(map[string]any{"mc": name, field: set[k]}))
	}
	return out
}

// contentBounded: the policy bounds u's content, not only its name, so
// reach must render it whole.
func contentBounded(u *unstructured.Unstructured) bool {
	gk := u.GroupVersionKind().GroupKind()
	_, grant := grantKinds[gk]
	return grant || workloadKinds[gk] || gk.Group == "machineconfiguration.openshift.io" && (gk.Kind == "MachineConfig" || gk.Kind == "KubeletConfig")
}

// Node labels the facts read (pkg/rendercontext facts.go).
const (
	nfd          = "feature.node.kubernetes.io/"
	labelWorker  = "node-role.kubernetes.io/worker"
	labelMaster  = "node-role.kubernetes.io/master"
	vendorLabel  = nfd + "cpu-model.vendor_id"
	controlPlane = "node-role.kubernetes.io/control-plane"
)

// everyNode is a worker and a master of each CPU vendor, each with every
// hardware feature the facts detect.
func everyNode() []corev1.Node {
	var out []corev1.Node
	for _, role := range []string{"worker", "master"} {
		for _, vendor := range []string{"GenuineIntel", "AuthenticAMD"} {
			l := map[string]string{vendorLabel: vendor, nfd + "memory-numa": "true", nfd + "iommu-enabled": "true",
				nfd + "network-sriov.capable": "true", nfd + "pci-0300_10de.present": "true", nfd + "usb-ff_0bda_8153.present": "true"}
			if role == "worker" {
				l[labelWorker] = ""
			} else {
				l[labelMaster], l[controlPlane] = "", ""
			}
			out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: role + "-" + vendor, Labels: l}})
		}
	}
	return out
}
