// Package nodepool writes, for a hosted control plane (HyperShift), the
// node configuration the autopilot would apply as what a NodePool takes:
// a ConfigMap on the management cluster whose "config" key holds the
// MachineConfigs and KubeletConfig, referenced from NodePool spec.config.
// The guest cluster serves neither kind, so the autopilot cannot write
// them there; a person or a policy on the management cluster applies this.
//
// The rules are HyperShift's (hypershift-operator/controllers/nodepool/
// config.go, ConfigGenerator.parse and defaultAndValidateConfigManifest):
// a ConfigMap's "config" may hold several YAML documents; only
// MachineConfig, KubeletConfig, ContainerRuntimeConfig and image policy
// kinds are taken; every MachineConfig is given the worker role and every
// KubeletConfig the built-in pool selector; a NodePool lists at most 10
// ConfigMaps (the NodePool CRD's spec.config maxItems).
package nodepool

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"
)

// ConfigKey is the ConfigMap key HyperShift reads (token.go, TokenSecretConfigKey).
const ConfigKey = "config"

// Name names the ConfigMap.
const Name = "virt-platform-autopilot-node-config"

// roleLabel is MCO's pool role label.
const roleLabel = "machineconfiguration.openshift.io/role"

// Result is the ConfigMap and what was left out, and why.
type Result struct {
	ConfigMap *corev1.ConfigMap
	// Objects names what the ConfigMap holds ("Kind/name"), sorted.
	Objects []string
	// Skipped names objects a NodePool cannot take, with why.
	Skipped []string
}

// Config collects the node configuration of ds (the decisions that would
// apply a MachineConfig or KubeletConfig, or go to a NodePool) into one
// ConfigMap in namespace (the NodePool's, on the management cluster).
// NodePools hold workers only: a master MachineConfig is left out.
func Config(ds []engine.Decision, namespace string) (Result, error) {
	var res Result
	var docs []string
	for i := range ds {
		d := &ds[i]
		if d.Verdict != engine.VerdictNodePool && d.Verdict != engine.VerdictIncluded {
			continue
		}
		obj := d.Desired
		if obj == nil {
			obj = d.Rendered
		}
		if obj == nil {
			continue
		}
		switch obj.GetKind() {
		case "MachineConfig":
			if r := obj.GetLabels()[roleLabel]; r != "worker" {
				res.Skipped = append(res.Skipped, fmt.Sprintf("MachineConfig/%s: role %q (a NodePool's nodes are workers; HyperShift sets every MachineConfig's role to worker)", obj.GetName(), r))
				continue
			}
		case "KubeletConfig":
		case "ContainerRuntimeConfig":
			res.Skipped = append(res.Skipped, fmt.Sprintf("ContainerRuntimeConfig/%s: not written by this version's NodePool output", obj.GetName()))
			continue
		default:
			continue
		}
		// It leaves the cluster: credentials by field, as every output.
		y, err := objyaml.Marshal(redact.Object(clean(obj)).Object)
		if err != nil {
			return res, fmt.Errorf("%s/%s: %w", obj.GetKind(), obj.GetName(), err)
		}
		docs = append(docs, string(y))
		res.Objects = append(res.Objects, obj.GetKind()+"/"+obj.GetName())
	}
	sort.Strings(docs)
	sort.Strings(res.Objects)
	sort.Strings(res.Skipped)
	res.ConfigMap = &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "virt-platform-autopilot"}},
		Data:       map[string]string{ConfigKey: strings.Join(docs, "---\n")},
	}
	return res, nil
}

// clean drops what only a live object carries (the NodePool controller
// decodes the documents as new objects).
func clean(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c
}

// Patch is the JSON patch that adds the ConfigMap to a NodePool's
// spec.config (kubectl patch nodepool NAME --type=json -p ...).
func Patch() string {
	return `[{"op":"add","path":"/spec/config/-","value":{"name":"` + Name + `"}}]`
}
