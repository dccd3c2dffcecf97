package rendercontext

import "k8s.io/apimachinery/pkg/runtime/schema"

// Well-known object identities read into a RenderContext.
var (
	HCOGVK             = schema.GroupVersionKind{Group: HCOGroup, Version: HCOVersion, Kind: HCOKind}
	InfrastructureGVK  = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}
	KubeletConfigGVK   = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "KubeletConfig"}
	MachineConfigGVK   = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	NodeHealthCheckGVK = schema.GroupVersionKind{Group: "remediation.medik8s.io", Version: "v1alpha1", Kind: "NodeHealthCheck"}
	PoolGVK            = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfigPool"}
	SchedulerGVK       = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Scheduler"}
)

// Optional OpenShift config CRDs; their objects are read only when installed.
const (
	InfrastructureCRD  = "infrastructures.config.openshift.io"
	KubeletConfigCRD   = "kubeletconfigs.machineconfiguration.openshift.io"
	NodeHealthCheckCRD = "nodehealthchecks.remediation.medik8s.io"
	PoolCRD            = "machineconfigpools.machineconfiguration.openshift.io"
	SchedulerCRD       = "schedulers.config.openshift.io"
)

// HCOCRD is the HyperConverged CRD's name.
const HCOCRD = "hyperconvergeds.hco.kubevirt.io"

// PeerKinds are the kinds an asset may declare exclusive (catalog
// Exclusive), by CRD: every object of them is read, whoever owns it, to
// judge whether another one already holds the scope (engine.Clash).
var PeerKinds = map[schema.GroupVersionKind]string{
	KubeletConfigGVK:   KubeletConfigCRD,
	NodeHealthCheckGVK: NodeHealthCheckCRD,
}
