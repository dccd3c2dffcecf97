package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
)

// asJSON is v through JSON, so outputs compare as an admin reads them.
func asJSON(v any) []any {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out []any
	Expect(json.Unmarshal(b, &out)).To(Succeed())
	return out
}

// warnings are the "warning:" lines a render wrote, sorted.
func warnings(stderr string) []string {
	out := []string{}
	for _, l := range strings.Split(stderr, "\n") {
		if w, ok := strings.CutPrefix(l, "warning: "); ok {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

func factsSpecs(ctx context.Context) {
	It("renders a cluster from its facts file exactly as the controller decides on that cluster", func() {
		requireVendorCRDs()
		untilSettled()

		autopilotDeployment(ctx)

		// A customization only a live object holds: without the objects
		// the evaluation read, an offline render could not know it.
		eval, _, err := rec.Preview(ctx)
		Expect(err).NotTo(HaveOccurred())
		var target *unstructured.Unstructured
		for i := range eval.Decisions {
			d := &eval.Decisions[i]
			switch {
			case d.Verdict != engine.VerdictIncluded || d.Live == nil || d.Asset.Shared || catalog.RebootKinds[d.Desired.GetKind()]:
			case d.Desired.GetKind() == "HyperConverged":
			// (Whose labels the admission policy pins: a label can aggregate a role.)
			case slices.Contains([]string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "SecurityContextConstraints"}, d.Desired.GetKind()):
			default:
				target = d.Desired
			}
			if target != nil {
				break
			}
		}
		Expect(target).NotTo(BeNil(), "an applied object of a non-node asset among %v", func() []string {
			var out []string
			for _, d := range eval.Decisions {
				out = append(out, fmt.Sprintf("%s %v live=%v shared=%v", d.Asset.Name, d.Verdict, d.Live != nil, d.Asset.Shared))
			}
			return out
		}())
		gvk, ns, name := target.GroupVersionKind(), target.GetNamespace(), target.GetName()
		patch := `[{"op":"add","path":"/metadata/labels/facts-spec","value":"live-only"}]`
		setPatch := func(v string) {
			update(gvk, ns, name, "kubectl-edit", func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Patch, v) })
		}
		setPatch(patch)
		DeferCleanup(setPatch, "")
		Eventually(func() string {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
			return u.GetLabels()["facts-spec"]
		}).Should(Equal("live-only"))

		dir := GinkgoT().TempDir()
		kubeconfig, factsPath, key := writeKubeconfig(dir), filepath.Join(dir, "cluster.facts.yaml"), filepath.Join(dir, "facts.key")
		Expect(os.WriteFile(key, []byte(rand.String(40)), 0o600)).To(Succeed())
		// Equal at a quiet moment: the facts and the controller's caches
		// are read one after the other.
		Eventually(func(g Gomega) {
			var facts, errOut bytes.Buffer
			g.Expect(cluster.Render([]string{"--kubeconfig", kubeconfig, "--namespace", hcoNamespace,
				"--autopilot-deployment", operatorNamespace + "/virt-platform-autopilot", "-o", "facts", "--facts-key", key}, &facts, &errOut)).To(Equal(0), errOut.String())
			g.Expect(os.WriteFile(factsPath, facts.Bytes(), 0o600)).To(Succeed())

			// Offline, as an admin or a pipeline runs it: the offline binary's
			// command line, no cluster.
			var out bytes.Buffer
			errOut.Reset()
			// Signed: it carries a customization, which only a verified
			// file may.
			g.Expect(cli.Render([]string{"--facts-file", factsPath, "--facts-key", key, "-o", "json", "--show-excluded"}, &out, &errOut)).To(BeElementOf(0, cli.ExitInvalid), errOut.String())
			var offline []any
			g.Expect(json.Unmarshal(out.Bytes(), &offline)).To(Succeed())

			eval, notices, err := rec.Preview(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(offline).To(Equal(asJSON(preview.Entries(eval.Decisions, true))), "every asset: verdict, reason and object")
			var want []string
			for _, n := range notices {
				want = append(want, n.Message)
			}
			sort.Strings(want)
			if want == nil {
				want = []string{}
			}
			g.Expect(warnings(errOut.String())).To(Equal(want), "the HCO inputs reported")
		}).Should(Succeed())

		// Unsigned, the same facts carry the live object's patch: a render
		// from them is refused, the file's author could have written it.
		var unsigned, unsignedErr, out bytes.Buffer
		Expect(cluster.Render([]string{"--kubeconfig", kubeconfig, "--namespace", hcoNamespace,
			"--autopilot-deployment", operatorNamespace + "/virt-platform-autopilot", "-o", "facts"}, &unsigned, &unsignedErr)).To(Equal(0), unsignedErr.String())
		unsignedPath := filepath.Join(dir, "unsigned.facts.yaml")
		Expect(os.WriteFile(unsignedPath, unsigned.Bytes(), 0o600)).To(Succeed())
		unsignedErr.Reset()
		Expect(cli.Render([]string{"--facts-file", unsignedPath, "-o", "json"}, &out, &unsignedErr)).To(Equal(cli.ExitError))
		Expect(out.String()).To(BeEmpty())
		Expect(unsignedErr.String()).To(And(ContainSubstring(name), ContainSubstring(annotations.Patch), ContainSubstring("--facts-key")))

		// A fact it cannot read (the operand images, without the autopilot's
		// Deployment) writes no file: it would record a guess.
		var none, errOut bytes.Buffer
		Expect(cluster.Render([]string{"--kubeconfig", kubeconfig, "--namespace", hcoNamespace,
			"--autopilot-deployment", "nowhere/none", "-o", "facts"}, &none, &errOut)).To(Equal(cli.ExitError))
		Expect(none.String()).To(BeEmpty())
		Expect(errOut.String()).To(And(ContainSubstring("no facts written"), ContainSubstring("operand images")))

		// The live-only customization is in the facts and in the render.
		raw, err := os.ReadFile(factsPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring(`live-only`))
	})
}

// autopilotDeployment creates the autopilot's Deployment for the spec:
// the operand images, as the controller's pod sees them (a render reads
// them from it).
func autopilotDeployment(ctx context.Context) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "virt-platform-autopilot"}}
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "autopilot"}}
	dep.Spec.Template.Labels = map[string]string{"app": "autopilot"}
	var env []corev1.EnvVar
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, catalog.ImagePrefix) {
			env = append(env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: "autopilot", Env: env}}
	Expect(k8s.Create(ctx, dep)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, dep))).To(Succeed()) })
}
