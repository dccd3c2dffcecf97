package integration

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// deletionSpecs: each protection keeps a real deletion candidate (an
// object the autopilot created for an opt-in feature, then switched off)
// on the real API server; lifting it lets the same object go, so the
// object was deletable and only the protection kept it.
func deletionSpecs(ctx context.Context) {
	setHCO := func(mutate func(u *unstructured.Unstructured)) string {
		return update(hcoGVK, hcoNamespace, hcoName, "admin", mutate)
	}
	deschedulerPresent := func() bool { return get(kdGVK, deschedulerNamespace, "cluster") != nil }
	onObject := func(k, v string) {
		update(kdGVK, deschedulerNamespace, "cluster", "admin", func(u *unstructured.Unstructured) { setAnnotation(u, k, v) })
	}
	protections := []struct {
		name          string
		protect, lift func()
	}{
		{"paused", func() {
			setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, "OFF") })
		},
			func() { setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, "") }) }},
		{"partial activation", func() {
			setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, "psi-enable") })
		},
			func() { setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.Autopilot, "") }) }},
		{"excluded", func() {
			setHCO(func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisabledResources, "kubedescheduler/openshift-kube-descheduler-operator/cluster")
			})
		}, func() {
			setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.DisabledResources, "") })
		}},
		{"unmanaged", func() { onObject(annotations.Mode, "unmanaged") }, func() { onObject(annotations.Mode, "") }},
		{"a mode not understood", func() { onObject(annotations.Mode, "unmanged") }, func() { onObject(annotations.Mode, "") }},
		{"adopted", func() { onObject(annotations.Adopted, "true") }, func() { onObject(annotations.Adopted, "") }},
		{"shared", func() { onObject(annotations.Shared, "true") }, func() { onObject(annotations.Shared, "") }},
		{"already deleting", func() {
			update(kdGVK, deschedulerNamespace, "cluster", "admin", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"example.com/hold"}) })
			Expect(k8s.Delete(ctx, get(kdGVK, deschedulerNamespace, "cluster"))).To(Succeed())
		}, func() {
			update(kdGVK, deschedulerNamespace, "cluster", "admin", func(u *unstructured.Unstructured) { u.SetFinalizers(nil) })
		}},
	}
	for _, p := range protections {
		It("keeps a switched-off asset's object while it is "+p.name+", and removes it once that is lifted", func() {
			Expect(deschedulerPresent()).To(BeFalse())
			setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })
			Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
			uid := get(kdGVK, deschedulerNamespace, "cluster").GetUID()

			p.protect()
			rv := setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "false") })
			reconciledAt(rv)
			// Two more passes: a deletion would have had its chance.
			for range 2 {
				rv = poke()
				reconciledAt(rv)
			}
			kept := get(kdGVK, deschedulerNamespace, "cluster")
			Expect(kept).NotTo(BeNil(), "%s: the object is kept", p.name)
			Expect(kept.GetUID()).To(Equal(uid))

			p.lift()
			if p.name == "already deleting" {
				// The API server finishes the deletion it started.
				Eventually(deschedulerPresent).Should(BeFalse())
				return
			}
			poke()
			Eventually(deschedulerPresent).Should(BeFalse(), "%s lifted: the same object, switched off, goes", p.name)
		})
	}

	// once arms requests.before to run change the first time a request
	// matches (method, path suffix), and reports whether it has run.
	once := func(method, suffix string, change func()) func() bool {
		var started, done atomic.Bool
		f := func(req *http.Request) {
			if req.Method == method && strings.HasSuffix(req.URL.Path, suffix) && started.CompareAndSwap(false, true) {
				change()
				done.Store(true)
			}
		}
		requests.before.Store(&f)
		DeferCleanup(func() { requests.before.Store(nil) })
		return done.Load
	}
	switchedOn := func() types.UID {
		Expect(deschedulerPresent()).To(BeFalse())
		setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "true") })
		Eventually(outcomeOf("descheduler-loadaware")).Should(Equal(engine.Unchanged))
		return get(kdGVK, deschedulerNamespace, "cluster").GetUID()
	}

	It("deletes with preconditions: a person's edit landing between the read and the DELETE survives, and is judged again", func() {
		uid := switchedOn()
		// Just before the DELETE reaches the API server, an admin takes
		// the object over; the DELETE still names the version it judged.
		ran := once(http.MethodDelete, "/kubedeschedulers/cluster", func() { onObject(annotations.Mode, "unmanaged") })
		reconciledAt(setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "false") }))
		Eventually(ran).Should(BeTrue(), "the autopilot tried to delete the switched-off object")
		for range 2 {
			reconciledAt(poke())
		}
		kept := get(kdGVK, deschedulerNamespace, "cluster")
		Expect(kept).NotTo(BeNil(), "the DELETE of an older version is refused by the API server")
		Expect(kept.GetUID()).To(Equal(uid))
		Expect(kept.GetAnnotations()).To(HaveKeyWithValue(annotations.Mode, "unmanaged"))

		onObject(annotations.Mode, "")
		poke()
		Eventually(deschedulerPresent).Should(BeFalse(), "judged again without the opt-out, the object goes")
	})

	It("decides a deletion on the HCO as the API server has it, not on the reconcile's cached read", func() {
		uid := switchedOn()
		// The exclusion lands after the reconcile read the HCO from its
		// cache and just before the read that precedes a deletion: the
		// cached context says delete, the API server's says keep.
		exclude := func() {
			setHCO(func(u *unstructured.Unstructured) {
				setAnnotation(u, annotations.DisabledResources, "KubeDescheduler/"+deschedulerNamespace+"/cluster")
			})
		}
		ran := once(http.MethodGet, "/hyperconvergeds/"+hcoName, exclude)
		mark := requests.mark()
		// (The reconcile records the exclusion's version, not this one.)
		setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, loadAware, "false") })
		Eventually(ran).Should(BeTrue(), "a deletion was about to be decided")
		for range 2 {
			reconciledAt(poke())
		}
		kept := get(kdGVK, deschedulerNamespace, "cluster")
		Expect(kept).NotTo(BeNil(), "the fresh exclusion protects it")
		Expect(kept.GetUID()).To(Equal(uid))
		for _, r := range requests.since(mark) {
			Expect(r).NotTo(HavePrefix("DELETE"), "no DELETE was sent")
		}

		setHCO(func(u *unstructured.Unstructured) { setAnnotation(u, annotations.DisabledResources, "") })
		poke()
		Eventually(deschedulerPresent).Should(BeFalse(), "without the exclusion, the same object goes")
	})
}
