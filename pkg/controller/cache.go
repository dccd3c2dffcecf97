package controller

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// CacheOptions scopes the manager's cache to what the autopilot needs:
//   - managed kinds: only objects carrying the managed-by label;
//   - the HCO: every HyperConverged in its namespace (it is read before it is ours);
//   - Nodes: all, trimmed to labels and capacity (hardware facts); a label
//     filtered cache would see no node at all;
//   - CRDs: all, trimmed to names and versions, keeping the schema only of
//     gate CRDs, whose schemas templates read;
//   - OpenShift Infrastructure and Scheduler: all (one object each).
func CacheOptions(namespace string, cat *catalog.Catalog) cache.Options {
	keepSchema := map[string]bool{}
	for _, a := range cat.Assets {
		if a.GateCRD != "" {
			keepSchema[a.GateCRD] = true
		}
	}
	all := labels.Everything()
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{annotations.ManagedByLabel: annotations.ManagedByValue}),
		ByObject: map[client.Object]cache.ByObject{
			unstructuredOf(rendercontext.HCOGVK): {
				Label:      all,
				Namespaces: map[string]cache.Config{namespace: {}},
			},
			&corev1.Node{}: {Label: all, Transform: trimNode},
			&apiextensionsv1.CustomResourceDefinition{}:     {Label: all, Transform: trimCRD(keepSchema)},
			unstructuredOf(rendercontext.InfrastructureGVK): {Label: all},
			unstructuredOf(rendercontext.SchedulerGVK):      {Label: all},
		},
	}
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// trimNode keeps the facts hardware detection reads: a node's status
// (images, conditions) is large and changes every few seconds.
func trimNode(in any) (any, error) {
	n, ok := in.(*corev1.Node)
	if !ok {
		return in, nil
	}
	return &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Status:     corev1.NodeStatus{Capacity: n.Status.Capacity},
	}, nil
}

// trimCRD drops what existence and version checks do not need; OpenAPI
// schemas are by far the largest part of a CRD.
func trimCRD(keepSchema map[string]bool) func(any) (any, error) {
	return func(in any) (any, error) {
		crd, ok := in.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return in, nil
		}
		crd.ManagedFields = nil
		crd.Annotations = nil
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		if !keepSchema[crd.Name] {
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Schema = nil
				crd.Spec.Versions[i].AdditionalPrinterColumns = nil
			}
			crd.Spec.Conversion = nil
		}
		return crd, nil
	}
}
