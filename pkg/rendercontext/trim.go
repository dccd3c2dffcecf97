package rendercontext

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
)

// What the autopilot keeps of a Node and a CRD: the controller's cache
// holds these trimmed copies, and a facts file records the same (one
// trim, so a facts file reads exactly as the controller's cache).

// TrimNode keeps the facts hardware detection reads: a node's status
// (images, conditions) is large and changes every few seconds.
func TrimNode(n *corev1.Node) *corev1.Node {
	var labels map[string]string
	for k, v := range n.Labels {
		if NodeLabelRead(k) {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = v
		}
	}
	var capacity corev1.ResourceList
	for r, q := range n.Status.Capacity {
		if NodeResourceRead(string(r)) {
			if capacity == nil {
				capacity = corev1.ResourceList{}
			}
			capacity[r] = q
		}
	}
	// The swap the kubelet reports: memory overcommit follows it.
	return &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: labels},
		Status:     corev1.NodeStatus{Capacity: capacity, NodeInfo: corev1.NodeSystemInfo{Swap: n.Status.NodeInfo.Swap}},
	}
}

// SchemasKept are the CRDs whose schemas templates read (the assets' gate
// CRDs): TrimCRD keeps them whole.
func SchemasKept(cat *catalog.Catalog) map[string]bool {
	keep := map[string]bool{}
	for _, a := range cat.Assets {
		if a.GateCRD != "" {
			keep[a.GateCRD] = true
		}
	}
	return keep
}

// TrimCRD drops, in place, what existence and version checks do not need;
// OpenAPI schemas are by far the largest part of a CRD and a cluster holds
// hundreds. keepSchema keeps the schema (SchemasKept). Callers record how
// each version merges (structure.Store) before they trim.
func TrimCRD(crd *apiextensionsv1.CustomResourceDefinition, keepSchema bool) {
	crd.ManagedFields = nil
	crd.Annotations = nil
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if keepSchema {
		return
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = nil
		crd.Spec.Versions[i].AdditionalPrinterColumns = nil
	}
	crd.Spec.Conversion = nil
}
