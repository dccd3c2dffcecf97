// Package gather reads what a RenderContext is built from (the HCO, CRDs,
// Nodes, OpenShift config, storage and the objects templates look up)
// from a cluster, through a client.Reader: the controller's cache or, for
// render --kubeconfig, the API server.
package gather

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Facts reads the RenderContext facts through r. The HCO is required (NotFound is returned
// as is, with the CRDs already filled in, so callers can idle and still
// watch for it); OpenShift config objects are read only when their CRD is
// among the listed CRDs. reads are the objects templates look up
// (Reads(catalog)). Operand images are not read here: the controller takes
// its own environment, render the autopilot's Deployment (Images).
func Facts(ctx context.Context, r client.Reader, namespace string, reads []rendercontext.ObjectKey) (rendercontext.Facts, error) {
	f := rendercontext.Facts{Namespace: namespace}
	// CRDs first: even without an HCO, callers need them to know what to watch.
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := r.List(ctx, &crds); err != nil {
		return f, fmt.Errorf("list CRDs: %w", err)
	}
	f.CRDs = crds.Items
	hco, err := HCO(ctx, r, namespace)
	if err != nil {
		return f, err
	}
	f.HCO = hco

	has := map[string]bool{}
	for i := range crds.Items {
		has[crds.Items[i].Name] = true
	}
	if has[rendercontext.InfrastructureCRD] {
		if f.Infrastructure, err = getOptional(ctx, r, rendercontext.InfrastructureGVK, "cluster"); err != nil {
			return f, err
		}
	}
	if has[rendercontext.SchedulerCRD] {
		if f.Scheduler, err = getOptional(ctx, r, rendercontext.SchedulerGVK, "cluster"); err != nil {
			return f, err
		}
	}
	// Every object of each exclusive kind, whoever owns it, and the pools'
	// labels and selectors: another object holding a scope the autopilot's
	// holds clashes with it. A failed list is kept as an unknown, never as
	// "none": only the assets that need it fail.
	for gvk, crd := range rendercontext.PeerKinds {
		if !has[crd] {
			continue
		}
		objs, err := listAll(ctx, r, gvk)
		if err != nil {
			if f.PeersErr == nil {
				f.PeersErr = map[schema.GroupVersionKind]error{}
			}
			f.PeersErr[gvk] = err
			continue
		}
		if f.Peers == nil {
			f.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{}
		}
		f.Peers[gvk] = objs
	}
	if has[rendercontext.PoolCRD] {
		f.Pools, f.PoolsErr = listAll(ctx, r, rendercontext.PoolGVK)
	}
	if has[rendercontext.StorageProfileCRD] {
		f.StorageProfiles, f.StorageProfilesErr = listAll(ctx, r, rendercontext.StorageProfileGVK)
	}
	served := map[schema.GroupKind]bool{}
	for i := range crds.Items {
		served[schema.GroupKind{Group: crds.Items[i].Spec.Group, Kind: crds.Items[i].Spec.Names.Kind}] = true
	}
	f.Objects, f.ObjectErrs = readObjects(ctx, r, reads, served)
	// The autopilot OpenShift Virtualization ships, if it runs here
	// (pkg/shipped): a failed read is kept, and holds every write.
	f.Shipped, f.ShippedErr = getNamespaced(ctx, r, ShippedKey(namespace))
	f.StorageClasses, f.StorageClassesErr = listAll(ctx, r, rendercontext.StorageClassGVK)
	if nr, ok := r.(NodeReader); ok {
		// The controller: nodes counted by class as their events arrive,
		// read under the pools just read (no node listed or copied).
		if f.NodeSet = nr.NodeSet(f.Pools, f.PoolsErr); f.NodeSet != nil {
			return f, nil
		}
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return f, fmt.Errorf("list nodes: %w", err)
	}
	f.Nodes = nodes.Items
	return f, nil
}

// NodeReader is a reader that keeps the nodes' facts itself (the
// controller's node index, pkg/nodefacts), read under the pools read in
// the same pass; nil while it does not hold every node (a replica that
// does not lead, or before the watch synced): then the nodes are listed.
type NodeReader interface {
	NodeSet(pools []*unstructured.Unstructured, poolsErr error) *rendercontext.NodeSet
}

// HCO reads the HyperConverged object of namespace.
func HCO(ctx context.Context, r client.Reader, namespace string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rendercontext.HCOGVK)
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: rendercontext.HCOName}, u); err != nil {
		return nil, err
	}
	return u, nil
}

func getOptional(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := r.Get(ctx, client.ObjectKey{Name: name}, u)
	switch {
	case err == nil:
		return u, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("get %s %s: %w", gvk.Kind, name, err)
	}
}

// ShippedKey is the shipped autopilot's Deployment in the HCO's
// namespace: the controller reads it from its own narrow watch.
func ShippedKey(namespace string) rendercontext.ObjectKey {
	return rendercontext.ObjectKey{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: namespace, Name: shipped.DeploymentName}
}

// getNamespaced reads one object by key; absent is nil, an error is kept.
func getNamespaced(ctx context.Context, r client.Reader, k rendercontext.ObjectKey) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u)
	switch {
	case err == nil:
		return u, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
}

// readObjects reads each declared object whose kind is served (a core kind,
// or one whose CRD is installed); a failed read is kept as an error, so
// only the assets reading it fail.
func readObjects(ctx context.Context, r client.Reader, reads []rendercontext.ObjectKey, served map[schema.GroupKind]bool) (map[rendercontext.ObjectKey]*unstructured.Unstructured, map[rendercontext.ObjectKey]error) {
	objs := make(map[rendercontext.ObjectKey]*unstructured.Unstructured, len(reads))
	var errs map[rendercontext.ObjectKey]error
	for _, k := range reads {
		if !rendercontext.BuiltIn(k.GVK) && !served[k.GVK.GroupKind()] {
			objs[k] = nil // its CRD is not installed: nothing to read
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.GVK)
		err := r.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u)
		switch {
		case err == nil:
			objs[k] = u
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			objs[k] = nil
		default:
			if errs == nil {
				errs = map[rendercontext.ObjectKey]error{}
			}
			errs[k] = err
		}
	}
	return objs, errs
}

// listAll lists every object of a kind; a kind that is not served lists
// nothing.
func listAll(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// LiveReader reads live objects straight from a cluster (the CLI has no
// cache); it implements engine.LiveReader.
type LiveReader struct{ Reader client.Reader }

// Live implements engine.LiveReader.
func (l LiveReader) Live(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ref := &unstructured.Unstructured{}
	ref.SetGroupVersionKind(gvk)
	ref.SetNamespace(namespace)
	ref.SetName(name)
	return Object(ctx, l.Reader, ref)
}

// Owned implements engine.OwnedReader as the controller's label-filtered
// cache answers: only an object carrying the autopilot's label.
func (l LiveReader) Owned(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return preview.OnlyOwned(l.Live(ctx, gvk, namespace, name))
}

// Object reads the live copy of ref: nil when it does not exist or its kind
// is not served.
func Object(ctx context.Context, r client.Reader, ref *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind())
	err := r.Get(ctx, client.ObjectKeyFromObject(ref), u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return u, nil
}

// ManagerContainer is the autopilot's container in its Deployment.
const ManagerContainer = "manager"

// Images reads the operand images the autopilot is deployed with: the
// RELATED_IMAGE_* environment of the Deployment's containers (as OLM sets
// it), so render against a cluster sees what the controller in its pod
// sees. An entry taken from elsewhere (valueFrom, envFrom, a $(VAR)
// reference) cannot be read here and is named in unread.
func Images(ctx context.Context, r client.Reader, deployment client.ObjectKey) (images map[string]string, unread []string, err error) {
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, deployment, d); err != nil {
		return nil, nil, fmt.Errorf("read the autopilot's Deployment %s for its operand images: %w", deployment, err)
	}
	// The autopilot's own container ("manager", as config/manager names
	// it); another container's environment is not the controller's.
	containers := d.Spec.Template.Spec.Containers
	for _, c := range containers {
		if c.Name == ManagerContainer {
			containers = []corev1.Container{c}
			break
		}
	}
	var env []string
	for _, c := range containers {
		for _, f := range c.EnvFrom {
			// A ConfigMap's or Secret's keys are the controller's
			// environment too, but not readable as a value here.
			src := "a ConfigMap or Secret"
			switch {
			case f.ConfigMapRef != nil:
				src = "ConfigMap " + f.ConfigMapRef.Name
			case f.SecretRef != nil:
				src = "Secret " + f.SecretRef.Name
			}
			unread = append(unread, "envFrom "+src)
		}
		for _, e := range c.Env {
			if !strings.HasPrefix(e.Name, catalog.ImagePrefix) {
				continue
			}
			if e.ValueFrom != nil || strings.Contains(e.Value, "$(") {
				unread = append(unread, e.Name)
				continue
			}
			env = append(env, e.Name+"="+e.Value)
		}
	}
	return rendercontext.ImagesFromEnv(env), unread, nil
}
