package clusterread

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodefacts"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/structure"
)

// CacheOptions scopes the manager's cache to what the autopilot owns:
//   - managed kinds: only objects carrying the managed-by label;
//   - Nodes: all, trimmed to labels and capacity (hardware facts); a label
//     filtered cache would see no node at all;
//   - CRDs: all, trimmed to names and versions, keeping the schema only of
//     gate CRDs, whose schemas templates read.
//
// Kinds that may not be installed (the HCO, OpenShift config) cannot be
// configured here (the cache resolves them at creation); they live in the
// facts cache, see factsCacheOptions.
func CacheOptions(cat *catalog.Catalog, structures *structure.Store) cache.Options {
	keepSchema := rendercontext.SchemasKept(cat)
	all := labels.Everything()
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{annotations.ManagedByLabel: annotations.ManagedByValue}),
		ByObject: map[client.Object]cache.ByObject{
			// Read, never changed: no copy per read (UnsafeDisableDeepCopy).
			// The node index keeps what it reads of a node; CRDs are listed
			// once per reconcile, hundreds of them.
			&corev1.Node{}: {Label: all, Transform: trimNode, UnsafeDisableDeepCopy: &noCopy},
			&apiextensionsv1.CustomResourceDefinition{}: {Label: all, Transform: trimCRD(keepSchema, structures), UnsafeDisableDeepCopy: &noCopy},
		},
	}
}

var noCopy = true

// factKinds are read unfiltered, whoever owns them: the HCO (read before it
// is ours, and whatever its annotations say) and OpenShift's cluster config.
var factKinds = map[schema.GroupVersionKind]bool{
	rendercontext.HCOGVK:            true,
	rendercontext.InfrastructureGVK: true,
	rendercontext.SchedulerGVK:      true,
	// The exclusive kinds (rendercontext.PeerKinds: KubeletConfigs,
	// NodeHealthChecks): a handful per cluster, all of them read to find
	// one that holds the autopilot's scope (engine.Clash).
	rendercontext.KubeletConfigGVK:   true,
	rendercontext.NodeHealthCheckGVK: true,
	rendercontext.PoolGVK:            true,
	// StorageProfiles: one per storage class, read to pick a class by
	// the access modes it offers.
	rendercontext.StorageProfileGVK: true,
	// StorageClasses: a few, read for the default class.
	rendercontext.StorageClassGVK: true,
}

// factsCacheOptions scope the second cache: namespaced fact kinds (the HCO)
// only in the HCO namespace; informers start when first read.
func factsCacheOptions(namespace string, base cache.Options) cache.Options {
	base.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	return base
}

// caches routes reads to the cache holding the kind, and bounds how long a
// read waits for a kind's informer to sync (see syncGate).
type caches struct {
	managed cache.Cache
	facts   cache.Cache
	gate    *syncGate
	// lookups serve the single objects templates read (nil: none).
	lookups *lookups
	// nodes count the nodes by class from the node watch (Sources).
	nodes *nodefacts.Index
}

// NodeSet is gather.NodeReader: the node index, read under pools (nil
// until it holds every node: the caller lists them).
func (c caches) NodeSet(pools []*unstructured.Unstructured, poolsErr error) *rendercontext.NodeSet {
	return c.nodes.Read(pools, poolsErr)
}

func (c caches) forGVK(gvk schema.GroupVersionKind) cache.Cache {
	if factKinds[gvk] {
		return c.facts
	}
	return c.managed
}

func (c caches) forObject(obj runtime.Object) cache.Cache {
	if u, ok := obj.(interface {
		GroupVersionKind() schema.GroupVersionKind
	}); ok {
		gvk := u.GroupVersionKind()
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		return c.forGVK(gvk)
	}
	return c.managed
}

func (c caches) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.lookups != nil {
		k := rendercontext.ObjectKey{GVK: obj.GetObjectKind().GroupVersionKind(), Namespace: key.Namespace, Name: key.Name}
		if ok, err := c.lookups.get(ctx, k, obj); ok {
			return err
		}
	}
	ch := c.forObject(obj)
	if err := c.gate.wait(ctx, ch, obj); err != nil {
		return err
	}
	return ch.Get(ctx, key, obj, opts...)
}

// List serves the kinds the controller's own sources watch (CRDs, Nodes),
// synced before the first reconcile; a deadline still bounds it.
func (c caches) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ch := c.forObject(list)
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		// Fact kinds listed for a few assets (KubeletConfigs, pools) go
		// through the sync gate: a kind that cannot be listed costs one
		// bounded wait, then fails at once, and only its assets fail.
		gvk := u.GroupVersionKind()
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		if err := c.gate.wait(ctx, ch, unstructuredOf(gvk)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.gate.timeout)
	defer cancel()
	return ch.List(ctx, list, opts...)
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// trimNode is rendercontext.TrimNode as a cache transform.
func trimNode(in any) (any, error) {
	if n, ok := in.(*corev1.Node); ok {
		return rendercontext.TrimNode(n), nil
	}
	return in, nil
}

// trimCRD is rendercontext.TrimCRD as a cache transform. How each version
// merges (a few paths, for exact drift verdicts) goes to structures first.
func trimCRD(keepSchema map[string]bool, structures *structure.Store) func(any) (any, error) {
	return func(in any) (any, error) {
		crd, ok := in.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return in, nil
		}
		// An informer may hand back a copy it already trimmed: Put keeps
		// what it recorded then.
		structures.Put(crd)
		rendercontext.TrimCRD(crd, keepSchema[crd.Name])
		return crd, nil
	}
}
