// Package shipped tells whether the autopilot OpenShift Virtualization
// ships inside the HyperConverged operator's CSV runs beside this one, and
// whether it acts. It writes the same objects under the same field
// manager name and managed-by label and reads the same HCO switch
// (platform.kubevirt.io/autopilot), so two writers would each undo the
// other's server-side applies without either seeing a fight: while it
// acts, or while that cannot be told, this autopilot writes nothing.
//
// It is judged from the cluster on every pass (its Deployment, the HCO's
// switch), never from memory. Facts about it come from its releases and
// from the HCO's (sources below); this package only reads them.
package shipped

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

// DeploymentName is the shipped autopilot's Deployment, installed by OLM
// from the HCO's CSV into the HCO's namespace. Same name in every HCO
// release that ships it (kubevirt/hyperconverged-cluster-operator
// hack/build-manifests.sh create_autopilot_csv, running the autopilot's
// cmd/csv-generator buildCSV).
const DeploymentName = "virt-platform-autopilot"

// selectorApp is the shipped Deployment's pod selector label
// (csv-generator buildCSV: app=virt-platform-autopilot with
// control-plane=controller-manager), in every release; this project's
// Deployment selects app.kubernetes.io/name instead, so one of the same
// name in the HCO's namespace is told apart by its selector.
const selectorApp = "virt-platform-autopilot"

// State is what this autopilot knows of the shipped one: a bounded code
// (a metric label value).
type State string

// The states.
const (
	// Absent: no shipped autopilot in the HCO's namespace.
	Absent State = "absent"
	// Idle: it runs but its release writes nothing under the HCO's switch
	// as set now, or it is scaled to zero.
	Idle State = "idle"
	// Acting: it writes the objects this autopilot would write.
	Acting State = "acting"
	// Unknown: it cannot be read, or its release is not one this release
	// knows, so whether it acts cannot be told: nothing is written.
	Unknown State = "unknown"
)

// States lists every State (one metric series each).
var States = []State{Absent, Idle, Acting, Unknown}

// Verdict is the judgement of one pass.
type Verdict struct {
	State State `json:"state"`
	// Object is its Deployment ("namespace/name"); empty when absent.
	Object string `json:"object,omitempty"`
	// Release is its version as this release knows it ("v0.0.10"),
	// empty when unknown.
	Release string `json:"release,omitempty"`
	// Reason says why, and for Acting and Unknown what the admin does.
	Reason string `json:"reason,omitempty"`
}

// Holds reports whether this autopilot must write nothing beside it.
func (v Verdict) Holds() bool { return v.State == Acting || v.State == Unknown }

// Judge decides from the shipped autopilot's Deployment in the HCO's
// namespace (nil: none; readErr: it could not be read) and the HCO's
// switch as set now.
func Judge(deploy *unstructured.Unstructured, readErr error, namespace, switchValue string, switchSet bool) Verdict {
	obj := namespace + "/" + DeploymentName
	if readErr != nil {
		return Verdict{State: Unknown, Object: obj, Reason: fmt.Sprintf(
			"whether the autopilot OpenShift Virtualization ships runs cannot be read (Deployment %s: %v): nothing is written until it can", obj, readErr)}
	}
	if deploy == nil || !isShipped(deploy) {
		return Verdict{State: Absent}
	}
	v := Verdict{Object: obj}
	rel, known := releaseOf(deploy)
	v.Release = rel.Version
	if replicas, found, err := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); err == nil && found && replicas == 0 {
		v.State, v.Reason = Idle, fmt.Sprintf("the autopilot OpenShift Virtualization ships (Deployment %s) is scaled to zero", obj)
		return v
	}
	value := strings.TrimSpace(switchValue)
	if !known {
		// A release this one does not know may act with the switch
		// absent (the public implementation's newer catalogs are on by
		// default): only the value every release reads as "off" is idle.
		if switchSet && value == "false" {
			v.State, v.Reason = Idle, fmt.Sprintf("the autopilot OpenShift Virtualization ships (Deployment %s) is idle: HCO annotation %s=false", obj, annotations.Autopilot)
			return v
		}
		v.State = Unknown
		v.Reason = fmt.Sprintf("the autopilot OpenShift Virtualization ships runs (Deployment %s, image %s) in a release this one does not know, which may act whatever HCO annotation %s says: nothing is written or deleted beside it; upgrade this autopilot to a release that knows it, or remove one of the two", obj, imageOf(deploy), annotations.Autopilot)
		return v
	}
	if !rel.acts(switchValue, switchSet) {
		v.State, v.Reason = Idle, fmt.Sprintf("the autopilot OpenShift Virtualization ships (Deployment %s, %s) runs and writes nothing while HCO annotation %s is absent, empty or \"false\"", obj, rel.Version, annotations.Autopilot)
		return v
	}
	v.State = Acting
	v.Reason = fmt.Sprintf("the autopilot OpenShift Virtualization ships (Deployment %s, %s) acts on HCO annotation %s=%q and writes the same objects under the same field manager name: nothing is written or deleted beside it. To hand over to this autopilot, remove the annotation (oc annotate hyperconverged -n %s %s %s-): that one then idles and this one acts; setting it again hands back",
		obj, rel.Version, annotations.Autopilot, value, namespace, rendercontext.HCOName, annotations.Autopilot)
	return v
}

// isShipped tells the shipped Deployment from this project's own of the
// same name by its selector.
func isShipped(deploy *unstructured.Unstructured) bool {
	app, _, _ := unstructured.NestedString(deploy.Object, "spec", "selector", "matchLabels", "app")
	return app == selectorApp
}

// imageOf is the manager container's image ("unknown" without one).
func imageOf(deploy *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
			if img, ok := m["image"].(string); ok {
				return img
			}
		}
	}
	return "unknown"
}

// releaseOf finds the shipped autopilot's release from its manager
// image's digest.
func releaseOf(deploy *unstructured.Unstructured) (release, bool) {
	img := imageOf(deploy)
	_, digest, ok := strings.Cut(img, "@sha256:")
	if !ok {
		return release{}, false
	}
	for _, r := range releases {
		for _, d := range r.Digests {
			if d == digest {
				return r, true
			}
		}
	}
	return release{}, false
}
