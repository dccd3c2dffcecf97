package rendercontext

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
)

// StorageProfileGVK is CDI's per-storage-class profile: which access and
// volume modes a class offers.
var StorageProfileGVK = schema.GroupVersionKind{Group: "cdi.kubevirt.io", Version: "v1beta1", Kind: "StorageProfile"}

// StorageClassGVK is the built-in StorageClass.
var StorageClassGVK = schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}

// StorageProfileCRD is its CRD's name.
const StorageProfileCRD = "storageprofiles.cdi.kubevirt.io"

// ObjectKey names one object a template may read with lookup.
type ObjectKey struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// KeyOf turns a catalog read into an ObjectKey.
func KeyOf(r catalog.ObjectRef) ObjectKey {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return ObjectKey{GVK: gv.WithKind(r.Kind), Namespace: r.Namespace, Name: r.Name}
}

func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.GVK.Kind + " " + k.Name
	}
	return k.GVK.Kind + " " + k.Namespace + "/" + k.Name
}

// Reads lists every object the catalog's assets declare, once each, sorted.
func Reads(cat *catalog.Catalog) []ObjectKey {
	seen := map[ObjectKey]bool{}
	var out []ObjectKey
	for _, a := range cat.Assets {
		for _, r := range a.Reads {
			if k := KeyOf(r); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Lookup returns a declared object's content (nil when it does not exist).
// An object the catalog does not declare is an error, so a template cannot
// read what the controller does not watch; so is a read that failed, so an
// unknown is never rendered as "absent".
func (rc *RenderContext) Lookup(apiVersion, kind, namespace, name string) (map[string]any, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	k := ObjectKey{GVK: gv.WithKind(kind), Namespace: namespace, Name: name}
	if err := rc.ObjectErrs[k]; err != nil {
		return nil, fmt.Errorf("lookup %s: %w", k, err)
	}
	u, declared := rc.Objects[k]
	if !declared {
		if rc.Objects == nil {
			return nil, nil // offline without cluster objects: absent
		}
		return nil, fmt.Errorf("lookup %s: not declared under the asset's reads in metadata.yaml", k)
	}
	if u == nil {
		return nil, nil
	}
	return u.Object, nil
}

// StorageProfileObjects returns the StorageProfiles' contents, sorted by
// name; a failed list is an error (never "none").
func (rc *RenderContext) StorageProfileObjects() ([]any, error) {
	if rc.StorageProfilesErr != nil {
		return nil, fmt.Errorf("list StorageProfiles: %w", rc.StorageProfilesErr)
	}
	out := make([]any, 0, len(rc.StorageProfiles))
	ps := append([]*unstructured.Unstructured(nil), rc.StorageProfiles...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].GetName() < ps[j].GetName() })
	for _, p := range ps {
		out = append(out, p.Object)
	}
	return out, nil
}

// Image returns the operand image name ("" when not configured).
func (rc *RenderContext) Image(name string) string { return rc.Images[name] }

// ImagesFromEnv reads the operand images from environment entries
// (KEY=VALUE), the way OLM hands them to an operator.
func ImagesFromEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if name := catalog.ImageName(k); ok && name != "" && v != "" {
			out[name] = v
		}
	}
	return out
}

// StorageClassesOffering lists, sorted, the storage classes whose CDI
// StorageProfile offers the access mode with the volume mode (CDI names
// each profile after its class).
func (rc *RenderContext) StorageClassesOffering(accessMode, volumeMode string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range rc.StorageProfiles {
		class, _, _ := unstructured.NestedString(p.Object, "status", "storageClass")
		if class == "" {
			class = p.GetName()
		}
		sets, _, _ := unstructured.NestedSlice(p.Object, "status", "claimPropertySets")
		for _, s := range sets {
			m, _ := s.(map[string]any)
			if m["volumeMode"] != volumeMode || seen[class] {
				continue
			}
			modes, _ := m["accessModes"].([]any)
			for _, am := range modes {
				if am == accessMode {
					seen[class] = true
					out = append(out, class)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// DefaultStorageClass returns the class marked default, choosing among
// several as the API server's admission does (the newest, then by name);
// "" when none is. A failed list is an error, never "none".
func (rc *RenderContext) DefaultStorageClass() (string, error) {
	if rc.StorageClassesErr != nil {
		return "", fmt.Errorf("list StorageClasses: %w", rc.StorageClassesErr)
	}
	var best *unstructured.Unstructured
	for _, sc := range rc.StorageClasses {
		a := sc.GetAnnotations()
		if a["storageclass.kubernetes.io/is-default-class"] != "true" && a["storageclass.beta.kubernetes.io/is-default-class"] != "true" {
			continue
		}
		if best == nil {
			best = sc
			continue
		}
		bt, st := best.GetCreationTimestamp(), sc.GetCreationTimestamp()
		if st.After(bt.Time) || (st.Equal(&bt) && sc.GetName() < best.GetName()) {
			best = sc
		}
	}
	if best == nil {
		return "", nil
	}
	return best.GetName(), nil
}

// MachineConfigurationKey is MCO's operator configuration singleton, which
// publishes the node disruption policy MCO acts on.
var MachineConfigurationKey = ObjectKey{
	GVK:  schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "MachineConfiguration"},
	Name: "cluster",
}

// NodeDisruptionPolicy is the policy MCO's daemon acts on (MachineConfiguration/
// cluster status), when it is known and current; ok is false otherwise, and
// then every MachineConfig change is judged a reboot. The object is read
// only when the catalog declares it under reads.
func (rc *RenderContext) NodeDisruptionPolicy() (nodedisruption.Policy, bool) {
	if rc.ObjectErrs[MachineConfigurationKey] != nil {
		return nodedisruption.Policy{}, false
	}
	u := rc.Objects[MachineConfigurationKey]
	if u == nil {
		return nodedisruption.Policy{}, false
	}
	p, ok, err := nodedisruption.ClusterPolicy(u.Object)
	if err != nil {
		return nodedisruption.Policy{}, false
	}
	return p, ok
}

// KubeletConfigDirFlag is how MCO's kubelet.service makes the kubelet read
// drop-ins: --config-dir on its command line (machine-config-operator
// templates/worker/01-worker-kubelet/_base/units/kubelet.service.yaml from
// 4.21, commit fc21115e5; templates/master/... from 5.0).
const KubeletConfigDirFlag = "--config-dir=/etc/openshift/kubelet.conf.d"

// KubeletReadsDropIns reports whether the kubelet of pool role reads the
// drop-in folder, from the kubelet.service MCO renders for the role into
// MachineConfig 01-<role>-kubelet (read: declared under an asset's reads).
// Every pool taking the role's MachineConfigs (a custom pool taking
// worker's) runs that unit. An object that cannot be read, or whose unit
// cannot be told, is an error: unknown is never read as either answer. An
// absent one (no MCO templates: offline, or not a cluster MCO renders) is
// false, the form that stood before the folder existed.
func (rc *RenderContext) KubeletReadsDropIns(role string) (bool, error) {
	k := ObjectKey{GVK: MachineConfigGVK, Name: "01-" + role + "-kubelet"}
	if err := rc.ObjectErrs[k]; err != nil {
		return false, fmt.Errorf("cannot tell whether the %s kubelet reads drop-ins: read MachineConfig %s: %w", role, k.Name, err)
	}
	u := rc.Objects[k]
	if u == nil {
		return false, nil
	}
	units, _, err := unstructured.NestedSlice(u.Object, "spec", "config", "systemd", "units")
	if err != nil {
		return false, fmt.Errorf("cannot tell whether the %s kubelet reads drop-ins: MachineConfig %s spec.config.systemd.units: %w", role, k.Name, err)
	}
	for _, x := range units {
		unit, _ := x.(map[string]any)
		if name, _ := unit["name"].(string); name != "kubelet.service" {
			continue
		}
		contents, ok := unit["contents"].(string)
		if !ok {
			return false, fmt.Errorf("cannot tell whether the %s kubelet reads drop-ins: MachineConfig %s has kubelet.service without contents", role, k.Name)
		}
		return strings.Contains(contents, KubeletConfigDirFlag), nil
	}
	return false, fmt.Errorf("cannot tell whether the %s kubelet reads drop-ins: MachineConfig %s has no kubelet.service", role, k.Name)
}
