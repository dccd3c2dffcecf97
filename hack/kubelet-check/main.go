// Command kubelet-check judges kubelet configurations with the kubelet's own
// code (k8s.io/kubernetes), for test/nodecheck: it reads one case per line
// of JSON on stdin and writes one result per line on stdout, so a single
// process judges a whole test matrix.
//
// A case is what a node of one pool would run: the kubelet.conf template
// MCO renders for that pool and release, the KubeletConfig the autopilot
// renders for the pool (or none), the node-sizing settings and the drop-in
// files of the pool's MachineConfigs. The command then does what MCO and
// the kubelet do with them (mco.go, then kubelet.go) and reports every
// refusal, every warning and the effective configuration.
//
// It lives in its own module so the project's go.mod stays free of
// k8s.io/kubernetes (hack/kubelet-check.sh builds it once into bin/).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Case is one kubelet to judge.
type Case struct {
	ID string `json:"id"`
	// Template is the kubelet.conf MCO renders for the pool and release
	// before any KubeletConfig (templates/<role>/01-<role>-kubelet).
	Template string `json:"template"`
	// KubeletConfig is the spec of the KubeletConfig selecting the pool,
	// nil for none (the baseline a protection comparison starts from).
	KubeletConfig json.RawMessage `json:"kubeletConfig,omitempty"`
	// MCO holds the release's KubeletConfig rules.
	MCO MCORules `json:"mco"`
	// Sizing is the pool's /etc/node-sizing-enabled.env as MCO ships it.
	Sizing Sizing `json:"sizing"`
	// SizingDropIn: system-reserved reaches the kubelet as the drop-in
	// 20-auto-sizing.conf (MCO 5.0+), else as --system-reserved.
	SizingDropIn bool `json:"sizingDropIn"`
	// ConfigDir: the kubelet runs with --config-dir=/etc/openshift/kubelet.conf.d.
	ConfigDir bool `json:"configDir"`
	// DropIns are the files the pool's MachineConfigs write into that
	// folder, by base name.
	DropIns map[string]string `json:"dropIns,omitempty"`
	// Node is the machine the kubelet starts on.
	Node Node `json:"node"`
}

// MCORules are the KubeletConfig checks of one MCO release
// (pkg/controller/kubelet-config/helpers.go, validateUserKubeletConfig).
type MCORules struct {
	LogLevelMin int `json:"logLevelMin"`
	// RejectSwapFields: failSwapOn and memorySwap.swapBehavior refused (4.21+).
	RejectSwapFields bool `json:"rejectSwapFields"`
	// StaticPodPathEmptyOnly: staticPodPath may be "" on a worker pool
	// (5.0+); otherwise any staticPodPath is refused.
	StaticPodPathEmptyOnly bool `json:"staticPodPathEmptyOnly"`
	ControlPlane           bool `json:"controlPlane"`
	// SystemReservedCgroupCheck: systemReservedCgroup must equal
	// systemCgroups when both are set (4.22+).
	SystemReservedCgroupCheck bool `json:"systemReservedCgroupCheck"`
}

// Sizing is /etc/node-sizing-enabled.env.
type Sizing struct {
	Enabled bool   `json:"enabled"`
	Memory  string `json:"memory"`
	CPU     string `json:"cpu"`
	ES      string `json:"ephemeralStorage"`
}

// Node is the machine model: CPUs spread evenly over NUMA nodes.
type Node struct {
	CPUs        int   `json:"cpus"`
	NUMANodes   int   `json:"numaNodes"`
	MemoryBytes int64 `json:"memoryBytes"`
	Swap        bool  `json:"swap"`
}

// Result is the verdict on one case.
type Result struct {
	ID string `json:"id"`
	// Errors: MCO refuses the KubeletConfig, or the kubelet does not start.
	Errors []string `json:"errors,omitempty"`
	// Warnings: accepted, but something was dropped or ignored silently.
	Warnings []string `json:"warnings,omitempty"`
	// KubeletConf is /etc/kubernetes/kubelet.conf as MCO writes it.
	KubeletConf string `json:"kubeletConf,omitempty"`
	// Effective is the configuration the kubelet runs with (v1beta1 JSON):
	// after drop-ins, flags, defaults and the start-time overrides.
	Effective json.RawMessage `json:"effective,omitempty"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-check:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("case: %w", err)
		}
		if err := enc.Encode(judge(c)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// judge runs MCO's step, then the kubelet's.
func judge(c Case) Result {
	r := Result{ID: c.ID}
	conf, sizing, err := mcoRender(c, &r)
	if err != nil {
		r.Errors = append(r.Errors, "MCO: "+err.Error())
		return r
	}
	r.KubeletConf = string(conf)
	kubeletStart(c, conf, sizing, &r)
	return r
}
