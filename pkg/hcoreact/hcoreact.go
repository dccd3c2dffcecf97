// Package hcoreact says what the HyperConverged operator does when a field
// of its CR the golden config writes changes: which operand it
// reconfigures or deploys, whether that is a privileged workload, and
// whether any node reboots. A write of the HCO is judged by what it
// causes, not only by the CR it changes (render --output diff, the
// features view), and the golden config never crosses a trigger whose
// reaction the autopilot does not want (SkipsWasp).
//
// Facts come from kubevirt/hyperconverged-cluster-operator, for every
// release that serves hco.kubevirt.io/v1, the only version the autopilot
// reads: v1.18.0 and later (the v1 CRD version first appears in v1.18.0;
// v1.17.x serve v1beta1 only). No release creates a MachineConfig or a
// KubeletConfig (no such kind under controllers/ or pkg/ at any tag or
// branch), so no HCO reaction rolls a pool.
package hcoreact

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// Reaction is what the HCO does when one field changes.
type Reaction struct {
	// Field is the HCO field, dotted ("spec.virtualization.ksmConfiguration").
	Field string `json:"field"`
	// Effect says what the HCO does, in words.
	Effect string `json:"effect"`
	// Privileged: a privileged workload is deployed or removed.
	Privileged bool `json:"privileged,omitempty"`
}

// NoReboot is what every reaction does to nodes (package comment).
const NoReboot = "no MachineConfig or KubeletConfig: no pool rolls"

// overcommitPath is memoryOvercommitPercentage in hco.kubevirt.io/v1.
var overcommitPath = []string{"spec", "virtualization", "higherWorkloadDensity", "memoryOvercommitPercentage"}

// noOvercommit is the HCO's NoOverCommitPercentage: above it, memory is
// overcommitted (controllers/handlers/wasp-agent/daemonset.go).
const noOvercommit = 100

// waspTrigger and waspSkip are the values of the autopilot switch the HCO
// reads (AutopilotFullOptInAnnotationValue, AutopilotSwapAnnotationValue).
const (
	waspSkipAll  = "true"
	waspSkipSwap = "swap-enable"
)

// SkipsWasp reports whether the HCO's platform.kubevirt.io/autopilot value
// keeps it from deploying the WASP agent: HCO
// controllers/handlers/wasp-agent/daemonset.go shouldDeployWaspAgent
// (v1.18.0 to main): the value trimmed is exactly "true", or one of its
// comma-separated elements trimmed is exactly "swap-enable". Case
// matters, and only commas separate.
func SkipsWasp(value string, set bool) bool {
	if !set {
		return false
	}
	v := strings.TrimSpace(value)
	if v == waspSkipAll {
		return true
	}
	for _, e := range strings.Split(v, ",") {
		if strings.TrimSpace(e) == waspSkipSwap {
			return true
		}
	}
	return false
}

// DeploysWasp reports whether the HCO deploys the WASP agent for hco as
// written: shouldDeployWaspAgent's rule, memoryOvercommitPercentage above
// NoOverCommitPercentage unless the switch skips it.
func DeploysWasp(hco *unstructured.Unstructured) bool {
	if hco == nil {
		return false
	}
	v, set := hco.GetAnnotations()[annotations.Autopilot]
	if SkipsWasp(v, set) {
		return false
	}
	pct, found, err := unstructured.NestedInt64(hco.Object, overcommitPath...)
	return err == nil && found && pct > noOvercommit
}

// wasp is what deploying the WASP agent means (HCO daemonset.go
// newWaspAgentDaemonSet, scc.go, rbac.go; openshift-virtualization/wasp-agent
// v1.2.1 pkg/wasp/oci.go and limited-swap-manager).
const wasp = "the HCO deploys the WASP agent: a privileged DaemonSet (hostPID, the host's / mounted) with its SCC and ClusterRole, whose OCI hook gives every container of a Burstable pod unlimited swap after it starts and which rewrites swap limits every 20 s: a second swap stack beside the kubelet's LimitedSwap"

// table are the HCO's reactions to the fields the golden config writes,
// per field (each, HCO controllers/handlers/kubevirt.go or the named
// handler, v1.18.0 to main).
var table = []struct {
	path   []string
	effect string
}{
	{overcommitPath, "KubeVirt's developerConfiguration.memoryOvercommit follows it (kubevirt.go getKVDevConfig): VMs started afterwards whose memory request is not set get launcher pods requesting guest memory x 100 / the percentage; running VMs keep theirs"},
	{[]string{"spec", "virtualization", "ksmConfiguration"}, "KubeVirt's ksmConfiguration follows it (kubevirt.go getKVConfig): virt-handler turns KSM on, and off again, on the selected nodes"},
	{[]string{"spec", "virtualization", "liveMigrationConfig"}, "KubeVirt's migration limits follow it (kubevirt.go hcLiveMigrationToKv): the next migrations use them"},
	{[]string{"spec", "deployment", "applicationAwareConfig"}, "the HCO deploys or removes the Application-Aware Quota operator and its configuration (controllers/handlers/aaq.go)"},
	{[]string{"spec", "deployment", "uninstallStrategy"}, "KubeVirt's and CDI's uninstall strategy follow it (cdi.go): nothing on nodes"},
}

// Of lists the HCO's reactions to a write that turns before into after
// (both the HCO CR; before nil: created): one per changed field the table
// knows, and the WASP agent deployed or removed when the write crosses
// the HCO's trigger.
func Of(before, after *unstructured.Unstructured) []Reaction {
	var out []Reaction
	for _, t := range table {
		if changed(before, after, t.path) {
			out = append(out, Reaction{Field: strings.Join(t.path, "."), Effect: t.effect})
		}
	}
	was, will := DeploysWasp(before), DeploysWasp(after)
	switch {
	case will && !was:
		out = append(out, Reaction{Field: strings.Join(overcommitPath, "."), Effect: wasp, Privileged: true})
	case was && !will:
		out = append(out, Reaction{Field: strings.Join(overcommitPath, "."), Privileged: true,
			Effect: "the HCO removes the WASP agent (its DaemonSet, SCC, ClusterRole); its OCI hook file may stay on each node until it reboots"})
	}
	return out
}

func changed(before, after *unstructured.Unstructured, path []string) bool {
	var a, b any
	if before != nil {
		a, _, _ = unstructured.NestedFieldNoCopy(before.Object, path...)
	}
	if after != nil {
		b, _, _ = unstructured.NestedFieldNoCopy(after.Object, path...)
	}
	return !reflect.DeepEqual(a, b)
}
