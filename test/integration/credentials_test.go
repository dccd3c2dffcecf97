package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubevirt/virt-platform-autopilot/pkg/cli"
	"github.com/kubevirt/virt-platform-autopilot/pkg/cli/cluster"
	"github.com/kubevirt/virt-platform-autopilot/pkg/debug"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"
)

var farTemplateGVK = schema.GroupVersionKind{Group: "fence-agents-remediation.medik8s.io", Version: "v1alpha1", Kind: "FenceAgentsRemediationTemplate"}

func credentialSpecs(ctx context.Context) {
	It("lets no credential of what it reads leave the cluster: facts file, renders, diff, debug endpoints, logs, Events, metrics, fleet status", func() {
		requireVendorCRDs()
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "remediation", "nodehealthchecks.remediation.medik8s.io.yaml")))
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "remediation", "fenceagentsremediationtemplates.fence-agents-remediation.medik8s.io.yaml")))

		// A credential planted wherever an object the autopilot reads can
		// hold one, each unique, so a leak names its door.
		var planted []string
		plant := func(where string) string {
			p := "plant-" + where + "-" + rand.String(8)
			planted = append(planted, p)
			return p
		}
		lastApplied := func(where string) string { return fmt.Sprintf(`{"password":%q}`, plant(where)) }

		// The admin's fence template, as FAR's README writes one before
		// Secrets: BMC credentials in its parameters.
		const farNS = "openshift-workload-availability"
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: farNS}}))).To(Succeed())
		far := newObj(farTemplateGVK, farNS, "fenceagentsremediationtemplate-default")
		far.SetAnnotations(map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied("far-applied")})
		Expect(unstructured.SetNestedMap(far.Object, map[string]any{"spec": map[string]any{
			"agent":            "fence_ipmilan",
			"sharedparameters": map[string]any{"--username": "admin", "--password": plant("far-shared")},
			"nodeparameters":   map[string]any{"--password": map[string]any{"worker-0": plant("far-node")}},
		}}, "spec", "template")).To(Succeed())
		Expect(k8s.Create(ctx, far)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, far))).To(Succeed()) })

		// A provisioner's password in a StorageClass (the autopilot lists
		// them for the default class).
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "plant-gluster",
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied("sc-applied")}},
			Provisioner: "kubernetes.io/glusterfs", Parameters: map[string]string{"restuser": "admin", "restuserkey": plant("sc-parameter")}}
		Expect(k8s.Create(ctx, sc)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, sc))).To(Succeed()) })

		// kubectl apply's copy on a node (no role: it joins no pool), the
		// HCO and a managed object.
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "plant-node",
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied("node-applied")}}}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, node))).To(Succeed()) })
		Eventually(func() *unstructured.Unstructured { return get(mcGVK, "", swapMC) }).ShouldNot(BeNil())
		for _, o := range []struct {
			gvk        schema.GroupVersionKind
			ns, name   string
			where      string
			alsoOthers func(*unstructured.Unstructured)
		}{
			{gvk: hcoGVK, ns: hcoNamespace, name: hcoName, where: "hco-applied", alsoOthers: func(u *unstructured.Unstructured) {
				setAnnotation(u, "platform.kubevirt.io/enable-node-remediation", "true")
			}},
			{gvk: mcGVK, name: swapMC, where: "managed-applied"},
		} {
			v := lastApplied(o.where)
			update(o.gvk, o.ns, o.name, "kubectl-client-side-apply", func(u *unstructured.Unstructured) {
				setAnnotation(u, corev1.LastAppliedConfigAnnotation, v)
				if o.alsoOthers != nil {
					o.alsoOthers(u)
				}
			})
			gvk, ns, name := o.gvk, o.ns, o.name
			DeferCleanup(func() {
				update(gvk, ns, name, "kubectl-client-side-apply", func(u *unstructured.Unstructured) {
					setAnnotation(u, corev1.LastAppliedConfigAnnotation, "")
					if gvk == hcoGVK {
						setAnnotation(u, "platform.kubevirt.io/enable-node-remediation", "")
					}
				})
			})
		}
		// The autopilot has read all of it: the NodeHealthCheck escalates
		// to the fence template it read.
		Eventually(func() string {
			d := status("node-health-check").Desired
			if d == nil {
				return ""
			}
			b, _ := d.MarshalJSON()
			return string(b)
		}).Should(ContainSubstring("FenceAgentsRemediationTemplate"))
		Expect(outcomeAt("hco-golden-config", poke()).Outcome).NotTo(Equal(engine.Failed))

		// Every door out.
		outputs := map[string]string{}
		dir := GinkgoT().TempDir()
		autopilotDeployment(ctx)
		kubeconfig, facts := writeKubeconfig(dir), filepath.Join(dir, "cluster.facts.yaml")
		for _, o := range []string{"yaml", "json", "status", "diff", "features", "facts"} {
			var out, errOut bytes.Buffer
			args := []string{"--kubeconfig", kubeconfig, "--namespace", hcoNamespace, "-o", o}
			if o != "facts" {
				args = append(args, "--show-excluded")
			}
			code := cluster.Render(args, &out, &errOut)
			Expect(code).To(BeElementOf(0, 1, cli.ExitInvalid), "render -o %s: %s", o, errOut.String())
			outputs["render -o "+o] = out.String() + errOut.String()
			if o == "facts" {
				Expect(os.WriteFile(facts, out.Bytes(), 0o600)).To(Succeed())
			}
		}
		// The facts file held the objects, redacted: the test could fail.
		Expect(outputs["render -o facts"]).To(And(ContainSubstring("FenceAgentsRemediationTemplate"), ContainSubstring("plant-gluster"), ContainSubstring(redact.Mark)))
		for _, o := range []string{"yaml", "json", "status", "features"} {
			var out, errOut bytes.Buffer
			cli.Render([]string{"--facts-file", facts, "--show-excluded", "-o", o}, &out, &errOut)
			outputs["offline render -o "+o] = out.String() + errOut.String()
		}
		srv := (&debug.Server{Catalog: embedded(), Source: rec}).Handler()
		for _, path := range []string{"/debug/render?show-excluded=true", "/debug/render?format=json&show-excluded=true", "/debug/render/node-health-check",
			"/debug/features?format=json", "/debug/exclusions", "/debug/inputs", "/debug/tombstones", "/debug/health"} {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			outputs["debug "+path] = w.Body.String()
		}
		logs.mu.Lock()
		outputs["logs"] = logs.buf.String()
		logs.mu.Unlock()
		var evs eventsv1.EventList
		Expect(k8s.List(ctx, &evs)).To(Succeed())
		var notes strings.Builder
		for _, e := range evs.Items {
			fmt.Fprintln(&notes, e.Reason, e.Note, e.Regarding.Name)
		}
		outputs["events"] = notes.String()
		outputs["fleet status"] = fmt.Sprint(statusData())
		families, err := crmetrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		var prom bytes.Buffer
		for _, f := range families {
			_, _ = expfmt.MetricFamilyToText(&prom, f)
		}
		outputs["metrics"] = prom.String()

		for door, text := range outputs {
			Expect(text).NotTo(BeEmpty(), door)
			for _, p := range planted {
				Expect(text).NotTo(ContainSubstring(p), "%s carries a planted credential", door)
			}
		}
	})
}
