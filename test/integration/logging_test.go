package integration

import (
	"context"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// loggingSpecs: the LokiStack's storage class on a real API server.
func loggingSpecs(ctx context.Context) {
	lokiGVK := schema.GroupVersionKind{Group: "loki.grafana.com", Version: "v1", Kind: "LokiStack"}
	const sw, stackNS, stack = "platform.kubevirt.io/enable-logging", "openshift-logging", "logging-loki"
	class := func() string {
		u := get(lokiGVK, stackNS, stack)
		if u == nil {
			return ""
		}
		c, _, _ := unstructured.NestedString(u.Object, "spec", "storageClassName")
		return c
	}

	It("waits for a storage class, takes the default one as it appears, keeps an existing stack's class, and gives a new stack the HCO's", func() {
		requireVendorCRDs()
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "logging", "loki.grafana.com_lokistacks.yaml")))
		installCRD(ctx, readCRD(filepath.Join(vendorDir(), "logging", "observability.openshift.io_clusterlogforwarders.yaml")))
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(stackNS)}); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		infra := newObj(infraGVK, "", "cluster")
		infra.Object["spec"] = map[string]any{}
		Expect(k8s.Create(ctx, infra)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, infra))).To(Succeed()) })

		// On, with no default class and no annotation: the stack waits.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) { setAnnotation(u, sw, "true") })
		DeferCleanup(func() {
			update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
				setAnnotation(u, sw, "")
				setAnnotation(u, annotations.LoggingStorageClass, "")
			})
			Eventually(func() *unstructured.Unstructured { return get(lokiGVK, stackNS, stack) }).WithTimeout(time.Minute).Should(BeNil())
		})
		Eventually(outcomeOf("logging-lokistack")).Should(Equal(engine.MissingDependency))
		Expect(status("logging-lokistack").Reason).To(ContainSubstring(annotations.LoggingStorageClass))
		Expect(get(lokiGVK, stackNS, stack)).To(BeNil())

		// A default class appears: its watch brings the stack, on it.
		def := &storagev1.StorageClass{ObjectMeta: metaName("logging-default"), Provisioner: "example.com/none"}
		def.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		Expect(k8s.Create(ctx, def)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, def))).To(Succeed()) })
		Eventually(class).WithTimeout(time.Minute).Should(Equal("logging-default"))
		Eventually(outcomeOf("logging-lokistack")).Should(Equal(engine.Unchanged))

		// The annotation names another class: the existing stack keeps its
		// own (its bound volumes would not move), even with no default left.
		Expect(k8s.Delete(ctx, def)).To(Succeed())
		reconciledAt(update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.LoggingStorageClass, "fast-ssd")
		}))
		Eventually(outcomeOf("logging-lokistack")).Should(Equal(engine.Unchanged))
		Expect(class()).To(Equal("logging-default"))

		// A new stack (someone deleted it): the HCO's class.
		Expect(k8s.Delete(ctx, get(lokiGVK, stackNS, stack))).To(Succeed())
		poke()
		Eventually(class).WithTimeout(time.Minute).Should(Equal("fast-ssd"))

		// A value that is not a class name: reported, the stack left as it is.
		update(hcoGVK, hcoNamespace, hcoName, "admin", func(u *unstructured.Unstructured) {
			setAnnotation(u, annotations.LoggingStorageClass, "Not_A_Class")
		})
		Eventually(outcomeOf("logging-lokistack")).Should(Equal(engine.Invalid))
		reconciledAt(poke())
		Expect(class()).To(Equal("fast-ssd"))
	})
}
