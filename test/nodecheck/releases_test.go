package nodecheck

import (
	"fmt"
	"strings"
)

// release is what one OpenShift release's node software does with our
// objects. Facts from openshift/machine-config-operator's release
// branches (release-4.16 … release-5.0): go.mod (ignition, k8s.io/kubelet),
// pkg/controller/common/helpers.go (the ign3 import: the Ignition spec MCO
// parses to), templates/<role>/01-<role>-kubelet/_base/files/kubelet.yaml
// and units/kubelet.service.yaml, templates/*/kubelet-auto-node-sizing-
// enabled.yaml, pkg/controller/kubelet-config/helpers.go
// (validateUserKubeletConfig). Summarized in shared/reference/node-rules.md.
type release struct {
	name string
	// ignition is the spec MCO translates every MachineConfig to
	// (ParseCompatibleVersion of ignition config/v3_4 or v3_5).
	ignition string
	// kubelet is the Kubernetes minor of the release's kubelet (for the
	// report; hack/kubelet-check links one kubelet, see kubelet_test.go).
	kubelet string
	minor   int // 16 for 4.16 …, 100 for 5.0: ordering only
}

// releases: the oldest supported EUS (4.16), each release where a fact
// below changes (4.19 Ignition 3.5, 4.21 kubelet drop-in folder and swap
// rules, 4.22 system-reserved cgroup), and 5.0.
var releases = []release{
	{name: "4.16", ignition: "3.4", kubelet: "1.29", minor: 16},
	{name: "4.18", ignition: "3.4", kubelet: "1.31", minor: 18},
	{name: "4.20", ignition: "3.5", kubelet: "1.33", minor: 20},
	{name: "4.21", ignition: "3.5", kubelet: "1.34", minor: 21},
	{name: "4.22", ignition: "3.5", kubelet: "1.35", minor: 22},
	{name: "5.0", ignition: "3.5", kubelet: "1.36", minor: 100},
}

func (r release) atLeast(minor int) bool { return r.minor >= minor }

// configDir: kubelet.service runs the kubelet with
// --config-dir=/etc/openshift/kubelet.conf.d (workers from 4.21, commit
// fc21115e5; masters from 5.0).
func (r release) configDir(pool string) bool {
	if pool == "master" {
		return r.atLeast(100)
	}
	return r.atLeast(21)
}

// nodeSizing is the pool's default /etc/node-sizing-enabled.env: auto
// sizing off through 4.20, on for workers from 4.21 (not with an external
// control plane, which the matrix does not have), never on for masters.
func (r release) nodeSizing(pool string) (enabled bool) {
	return pool == "worker" && r.atLeast(21)
}

// sizingDropIn: from 5.0 system-reserved reaches the kubelet as the
// drop-in 20-auto-sizing.conf (MCO commit 36c7cead4), before as the
// --system-reserved flag from /etc/node-sizing.env.
func (r release) sizingDropIn() bool { return r.atLeast(100) }

// kubeletTemplate is kubelet.conf as MCO renders it for the pool, before
// any KubeletConfig (cluster feature gates left out: the kubelet the tool
// links would refuse OpenShift-only gate names, see node-rules 5.3).
func (r release) kubeletTemplate(pool string) string {
	var b strings.Builder
	b.WriteString(`kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  x509:
    clientCAFile: /etc/kubernetes/kubelet-ca.crt
  anonymous:
    enabled: false
cgroupDriver: systemd
cgroupRoot: /
clusterDNS:
  - 172.30.0.10
clusterDomain: cluster.local
containerLogMaxSize: 50Mi
enableSystemLogQuery: true
maxPods: 250
kubeAPIQPS: 50
kubeAPIBurst: 100
podPidsLimit: 4096
protectKernelDefaults: true
rotateCertificates: true
serializeImagePulls: false
staticPodPath: /etc/kubernetes/manifests
systemCgroups: /system.slice
nodeStatusUpdateFrequency: 10s
nodeStatusReportFrequency: 5m
serverTLSBootstrap: true
tlsMinVersion: VersionTLS12
`)
	if r.atLeast(21) {
		// failSwapOn: false on workers, true on masters; NoSwap (4.21+).
		fmt.Fprintf(&b, "failSwapOn: %t\nmemorySwap:\n  swapBehavior: NoSwap\n", pool == "master")
	}
	if r.atLeast(22) && pool == "worker" {
		b.WriteString("systemReservedCgroup: /system.slice\nenforceNodeAllocatable:\n  - pods\n  - system-reserved-compressible\n")
	}
	return b.String()
}

// kubeletUnit is MCO's kubelet.service as far as our units read it (the
// swap unit asks whether the kubelet reads the drop-in folder): written by
// the MCD to /etc/systemd/system (pkg/daemon/update.go, writeUnit).
func (r release) kubeletUnit(pool string) string {
	flags := "--config=/etc/kubernetes/kubelet.conf"
	if r.configDir(pool) {
		flags += " \\\n    --config-dir=/etc/openshift/kubelet.conf.d"
	}
	return "[Unit]\nDescription=Kubernetes Kubelet\nRequires=crio.service kubelet-dependencies.target\nAfter=kubelet-dependencies.target\n\n[Service]\nExecStart=/usr/bin/kubelet " + flags + "\n\n[Install]\nWantedBy=multi-user.target\n"
}

// mcoRules are validateUserKubeletConfig's release differences.
type mcoRules struct {
	LogLevelMin               int  `json:"logLevelMin"`
	RejectSwapFields          bool `json:"rejectSwapFields"`
	StaticPodPathEmptyOnly    bool `json:"staticPodPathEmptyOnly"`
	ControlPlane              bool `json:"controlPlane"`
	SystemReservedCgroupCheck bool `json:"systemReservedCgroupCheck"`
}

func (r release) mcoRules(pool string) mcoRules {
	min := 1
	if r.atLeast(22) {
		min = 0
	}
	return mcoRules{
		LogLevelMin:               min,
		RejectSwapFields:          r.atLeast(21),
		StaticPodPathEmptyOnly:    r.atLeast(100),
		ControlPlane:              pool == "master",
		SystemReservedCgroupCheck: r.atLeast(22),
	}
}
