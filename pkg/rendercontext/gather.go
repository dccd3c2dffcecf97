package rendercontext

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Well-known object identities read into a RenderContext.
var (
	HCOGVK            = schema.GroupVersionKind{Group: HCOGroup, Version: HCOVersion, Kind: HCOKind}
	InfrastructureGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}
	KubeletConfigGVK  = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"}
	PoolGVK           = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	SchedulerGVK      = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"}
)

// Optional OpenShift config CRDs; their objects are read only when installed.
const (
	InfrastructureCRD = "infrastructures.config.openshift.io"
	KubeletConfigCRD  = "kubeletconfigs.machineconfiguration.openshift.io"
	PoolCRD           = "machineconfigpools.machineconfiguration.openshift.io"
	SchedulerCRD      = "schedulers.config.openshift.io"
)

// Gather reads Facts through r. The HCO is required (NotFound is returned
// as is, with the CRDs already filled in, so callers can idle and still
// watch for it); OpenShift config objects are read only when their CRD is
// among the listed CRDs. reads are the objects templates look up
// (Reads(catalog)); operand images come from the process environment.
func Gather(ctx context.Context, r client.Reader, namespace string, reads []ObjectKey) (Facts, error) {
	f := Facts{Namespace: namespace, Images: ImagesFromEnv(os.Environ())}
	// CRDs first: even without an HCO, callers need them to know what to watch.
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := r.List(ctx, &crds); err != nil {
		return f, fmt.Errorf("list CRDs: %w", err)
	}
	f.CRDs = crds.Items
	hco, err := GetHCO(ctx, r, namespace)
	if err != nil {
		return f, err
	}
	f.HCO = hco

	has := map[string]bool{}
	for i := range crds.Items {
		has[crds.Items[i].Name] = true
	}
	if has[InfrastructureCRD] {
		if f.Infrastructure, err = getOptional(ctx, r, InfrastructureGVK, "cluster"); err != nil {
			return f, err
		}
	}
	if has[SchedulerCRD] {
		if f.Scheduler, err = getOptional(ctx, r, SchedulerGVK, "cluster"); err != nil {
			return f, err
		}
	}
	// Every KubeletConfig, whoever owns it, and the pools' labels: another
	// KubeletConfig selecting a pool the autopilot configures clashes with
	// the autopilot's. A failed list is kept as an unknown, never as "none":
	// only the assets that need it fail.
	if has[KubeletConfigCRD] {
		f.KubeletConfigs, f.KubeletConfigsErr = listAll(ctx, r, KubeletConfigGVK)
		if has[PoolCRD] && f.KubeletConfigsErr == nil {
			f.Pools, f.KubeletConfigsErr = listAll(ctx, r, PoolGVK)
		}
	}
	if has[StorageProfileCRD] {
		f.StorageProfiles, f.StorageProfilesErr = listAll(ctx, r, StorageProfileGVK)
	}
	served := map[schema.GroupKind]bool{}
	for i := range crds.Items {
		served[schema.GroupKind{Group: crds.Items[i].Spec.Group, Kind: crds.Items[i].Spec.Names.Kind}] = true
	}
	f.Objects, f.ObjectErrs = readObjects(ctx, r, reads, served)
	f.StorageClasses, f.StorageClassesErr = listAll(ctx, r, StorageClassGVK)
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return f, fmt.Errorf("list nodes: %w", err)
	}
	f.Nodes = nodes.Items
	return f, nil
}

// GetHCO reads the HyperConverged object of namespace.
func GetHCO(ctx context.Context, r client.Reader, namespace string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(HCOGVK)
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: HCOName}, u); err != nil {
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

// readObjects reads each declared object whose kind is served (a core kind,
// or one whose CRD is installed); a failed read is kept as an error, so
// only the assets reading it fail.
func readObjects(ctx context.Context, r client.Reader, reads []ObjectKey, served map[schema.GroupKind]bool) (map[ObjectKey]*unstructured.Unstructured, map[ObjectKey]error) {
	objs := make(map[ObjectKey]*unstructured.Unstructured, len(reads))
	var errs map[ObjectKey]error
	for _, k := range reads {
		if !BuiltIn(k.GVK) && !served[k.GVK.GroupKind()] {
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
				errs = map[ObjectKey]error{}
			}
			errs[k] = err
		}
	}
	return objs, errs
}

// HCOCRD is the HyperConverged CRD's name.
const HCOCRD = "hyperconvergeds.hco.kubevirt.io"

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
