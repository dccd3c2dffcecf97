package shipped

import "github.com/kubevirt/virt-platform-autopilot/pkg/annotations"

// Marks are the annotations the shipped autopilot writes on the HCO itself
// (its golden config, assets/active/hco/golden-config.yaml.tpl, every
// release): not inputs, never reported.
var Marks = []string{"platform.kubevirt.io/managed-by", "platform.kubevirt.io/version", annotations.ShippedPaused}

// Switches are the HCO annotations the shipped autopilot reads that this
// one does not, each with what this one does instead (its
// assets/active/metadata.yaml conditions, v0.0.10 to v0.1.2): set for it,
// they mean nothing here, which an admin handing over must know.
var Switches = map[string]string{
	"platform.kubevirt.io/openshift":                 "this autopilot reads the cluster's Infrastructure; its PCI passthrough needs platform.kubevirt.io/enable-pci-passthrough",
	"platform.kubevirt.io/enable-mtv":                "this autopilot configures MTV whenever its operator is installed",
	"platform.kubevirt.io/enable-metallb":            "this autopilot configures MetalLB whenever its operator is installed",
	"platform.kubevirt.io/enable-observability":      "this autopilot's console plugins follow the Cluster Observability Operator being installed",
	"platform.kubevirt.io/enable-metrics-exporter":   "this autopilot's switch is platform.kubevirt.io/enable-kubevirt-metrics-exporter",
	"platform.kubevirt.io/metrics-exporter-env":      "this autopilot does not take the exporter's environment from the HCO",
	"platform.kubevirt.io/enable-korrel8r":           "this autopilot enables the troubleshooting panel whenever the Cluster Observability Operator is installed",
	"platform.kubevirt.io/enable-incident-detection": "this autopilot enables incident detection from the UIPlugin CRD's schema",
}
