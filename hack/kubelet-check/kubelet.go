package main

// The kubelet's part, in the order kubernetes cmd/kubelet/app/server.go
// runs it at start: load the config file (configfiles loader: decode,
// defaults), default evictionHard only when absent (loadConfigFile),
// merge --config-dir drop-ins as JSON merge patches
// (mergeKubeletConfigurations), re-apply flags, ValidateKubeletConfiguration,
// then the checks that live outside it: reservedSystemCPUs over the
// reservations (run, getReservedCPUs), parsing the reservations
// (parseResourceList) and eviction thresholds (eviction.ParseThresholdConfig),
// node allocatable no larger than capacity (validateNodeAllocatable), the
// topology, CPU and memory managers' constructors (NewManager: the static
// CPU reservation, the memory manager's reservedMemory sum) and swap with
// failSwapOn (cm.NewContainerManager). Wherever the kubelet exports the
// function it is called; the few unexported steps are re-done here after
// the same rules, each named.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	_ "k8s.io/kubernetes/pkg/features" // registers the kubelet's feature gates
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletconfigv1beta1 "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
	"k8s.io/utils/cpuset"
)

// diskBytes is the node's root filesystem in the model: percentage
// eviction thresholds on nodefs become a reservation of this size.
const diskBytes = 500 << 30

// sizingDropIn is the drop-in MCO 5.0 writes system-reserved into
// (dynamic-system-reserved-calc.sh, write_kubelet_config_dropin).
const sizingDropIn = "20-auto-sizing.conf"

func kubeletStart(c Case, conf []byte, sizing Sizing, r *Result) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kubelet-check-")
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temp folder: nothing to do if it stays
	fail := func(format string, a ...any) { r.Errors = append(r.Errors, fmt.Sprintf(format, a...)) }

	// The kubelet decodes strictly, then leniently with a log line: a field
	// it does not know is ignored, which the test counts as a warning.
	if _, codecs, err := kubeletscheme.NewSchemeAndCodecs(serializer.EnableStrict); err == nil {
		if _, _, err := codecs.UniversalDecoder().Decode(conf, nil, nil); err != nil && runtime.IsStrictDecodingError(err) {
			r.Warnings = append(r.Warnings, "kubelet.conf: the kubelet ignores what strict decoding refuses: "+err.Error())
		}
	}
	confPath := filepath.Join(dir, "kubelet.conf")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		fail("%v", err)
		return
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, confPath)
	if err != nil {
		fail("%v", err)
		return
	}
	kc, err := loader.Load(ctx)
	if err != nil {
		fail("failed to load kubelet config file: %v", err)
		return
	}
	defaultEvictionHard(kc)

	machine := machineInfo(c.Node)
	sysReserved, err := systemReserved(sizing, machine)
	if err != nil {
		fail("node sizing: %v", err)
		return
	}
	dropIns := map[string]string{}
	if c.ConfigDir {
		for k, v := range c.DropIns {
			dropIns[k] = v
		}
		if c.SizingDropIn {
			dropIns[sizingDropIn] = sizingDropInFile(sysReserved)
		}
	}
	if err := mergeDropIns(kc, dir, dropIns); err != nil {
		fail("failed to merge kubelet configs: %v", err)
		return
	}
	if !c.SizingDropIn {
		// kubelet.service: --system-reserved=cpu=…,memory=…,ephemeral-storage=…
		// from /etc/node-sizing.env; a map flag replaces the file's map.
		kc.SystemReserved = sysReserved
	}

	fg := utilfeature.DefaultFeatureGate.DeepCopy()
	if err := fg.SetFromMap(kc.FeatureGates); err != nil {
		fail("feature gates: %v", err)
	}
	if err := validation.ValidateKubeletConfiguration(kc, fg); err != nil {
		for _, e := range hostIndependent(err) {
			fail("ValidateKubeletConfiguration: %v", e)
		}
	}
	startChecks(c, kc, machine, dir, fail)

	v := &kubeletv1beta1.KubeletConfiguration{}
	if err := kubeletconfigv1beta1.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(kc, v, nil); err != nil {
		fail("%v", err)
		return
	}
	r.Effective, _ = json.Marshal(v)
}

// defaultEvictionHard is loadConfigFile's rule: the defaults apply only
// when the file has no evictionHard, or merge in with
// mergeDefaultEvictionSettings.
func defaultEvictionHard(kc *kubeletconfig.KubeletConfiguration) {
	if kc.EvictionHard == nil {
		kc.EvictionHard = map[string]string{}
		for k, v := range eviction.DefaultEvictionHard {
			kc.EvictionHard[k] = v
		}
		return
	}
	if kc.MergeDefaultEvictionSettings {
		for k, v := range eviction.DefaultEvictionHard {
			if _, ok := kc.EvictionHard[k]; !ok {
				kc.EvictionHard[k] = v
			}
		}
	}
}

// mergeDropIns is mergeKubeletConfigurations: each .conf in lexical order,
// apiVersion and kind required, a JSON merge patch onto the v1beta1 form,
// then defaults again.
func mergeDropIns(kc *kubeletconfig.KubeletConfiguration, dir string, files map[string]string) error {
	if len(files) == 0 {
		return nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	versioned := &kubeletv1beta1.KubeletConfiguration{}
	if err := kubeletconfigv1beta1.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(kc, versioned, nil); err != nil {
		return err
	}
	base, err := json.Marshal(versioned)
	if err != nil {
		return err
	}
	for _, n := range names {
		if filepath.Ext(n) != ".conf" {
			continue // the kubelet skips it
		}
		p := filepath.Join(dir, "conf.d", n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return err
		}
		l, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, p)
		if err != nil {
			return err
		}
		patch, gvk, err := l.LoadIntoJSON()
		if err != nil {
			return fmt.Errorf("drop-in %s: %w", n, err)
		}
		if gvk == nil || *gvk != kubeletv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration") {
			return fmt.Errorf("drop-in %s: unknown apiVersion/kind: %v", n, gvk)
		}
		if base, err = jsonpatch.MergePatch(base, patch); err != nil {
			return fmt.Errorf("drop-in %s: %w", n, err)
		}
	}
	versioned = &kubeletv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(base, versioned); err != nil {
		return err
	}
	kubeletconfigv1beta1.SetDefaults_KubeletConfiguration(versioned)
	return kubeletconfigv1beta1.Convert_v1beta1_KubeletConfiguration_To_config_KubeletConfiguration(versioned, kc, nil)
}

// hostIndependent drops the refusals that judge the machine running this
// tool, not the configuration: validateKubeletOSConfiguration refuses a
// cgroup v1 host, and the nodes judged run RHCOS on cgroup v2.
func hostIndependent(err error) []error {
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	var out []error
	for _, e := range errs {
		if strings.Contains(e.Error(), "cgroup v1") && !cgroup2Host() {
			continue
		}
		out = append(out, e)
	}
	return out
}

func cgroup2Host() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// startChecks are the kubelet's start-time refusals outside
// ValidateKubeletConfiguration.
func startChecks(c Case, kc *kubeletconfig.KubeletConfiguration, machine *cadvisorapi.MachineInfo, dir string, fail func(string, ...any)) {
	logger := klog.Background()
	// run, getReservedCPUs: the set must be online CPUs; it then replaces
	// systemReserved.cpu and drops kubeReserved.cpu.
	reserved := cpuset.New()
	if kc.ReservedSystemCPUs != "" {
		set, err := cpuset.Parse(kc.ReservedSystemCPUs)
		all := cpuset.New()
		for i := 0; i < machine.NumCores; i++ {
			all = all.Union(cpuset.New(i))
		}
		switch {
		case err != nil:
			fail("unable to parse reserved-cpus list: %v", err)
		case !set.IsSubsetOf(all):
			fail("reserved-cpus: %s is not a subset of online-cpus: %s", kc.ReservedSystemCPUs, all)
		default:
			reserved = set
			delete(kc.KubeReserved, "cpu")
			if kc.SystemReserved == nil {
				kc.SystemReserved = map[string]string{}
			}
			kc.SystemReserved["cpu"] = fmt.Sprint(set.Size())
		}
	}
	kubeRes, err := resourceList(kc.KubeReserved)
	if err != nil {
		fail("--kube-reserved value failed to parse: %v", err)
	}
	sysRes, err := resourceList(kc.SystemReserved)
	if err != nil {
		fail("--system-reserved value failed to parse: %v", err)
	}
	hard, err := eviction.ParseThresholdConfig(nil, kc.EvictionHard, nil, nil, nil)
	if err != nil {
		fail("evictionHard: %v", err)
	}
	if _, err := eviction.ParseThresholdConfig(kc.EnforceNodeAllocatable, kc.EvictionHard, kc.EvictionSoft, kc.EvictionSoftGracePeriod, kc.EvictionMinimumReclaim); err != nil {
		fail("eviction thresholds: %v", err)
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewQuantity(int64(machine.NumCores), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(int64(machine.MemoryCapacity), resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(diskBytes, resource.BinarySI),
	}
	nar := allocatableReservation(sysRes, kubeRes, hard, capacity)
	for k, v := range nar {
		if c := capacity[k]; c.Cmp(v) < 0 {
			fail("invalid Node Allocatable configuration: resource %q has a reservation of %v but capacity of %v", k, v.String(), c.String())
		}
	}
	if _, err := topologymanager.NewManager(machine.Topology, kc.TopologyManagerPolicy, kc.TopologyManagerScope, kc.TopologyManagerPolicyOptions); err != nil {
		fail("topology manager: %v", err)
	}
	affinity := topologymanager.NewFakeManager()
	if _, err := cpumanager.NewManager(logger, kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions, kc.CPUManagerReconcilePeriod.Duration, machine, reserved, nar, filepath.Join(dir, "cpu"), affinity); err != nil {
		fail("cpu manager: %v", err)
	}
	if _, err := memorymanager.NewManager(logger, kc.MemoryManagerPolicy, machine, nar, kc.ReservedMemory, filepath.Join(dir, "memory"), affinity); err != nil {
		fail("memory manager: %v", err)
	}
	// cm.NewContainerManager: swap on a node whose kubelet fails on swap.
	if c.Node.Swap && kc.FailSwapOn {
		fail("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false")
	}
}

// resourceList is parseResourceList: only cpu, memory, ephemeral-storage
// and pid, non-negative quantities.
func resourceList(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		switch k {
		case "cpu", "memory", "ephemeral-storage", "pid":
		default:
			return nil, fmt.Errorf("cannot reserve %q resource", k)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("failed to parse quantity %q for %q resource: %w", v, k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", k, v)
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

// allocatableReservation is GetNodeAllocatableReservation: system + kube
// reserved plus the hard eviction thresholds on memory.available and
// nodefs.available (cm/helpers.go, hardEvictionReservation).
func allocatableReservation(sys, kube v1.ResourceList, hard []evictionapi.Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	add := func(k v1.ResourceName, q resource.Quantity) {
		v := out[k]
		v.Add(q)
		out[k] = v
	}
	for k, q := range sys {
		add(k, q)
	}
	for k, q := range kube {
		add(k, q)
	}
	for _, t := range hard {
		if t.Operator != evictionapi.OpLessThan {
			continue
		}
		switch t.Signal {
		case evictionapi.SignalMemoryAvailable:
			c := capacity[v1.ResourceMemory]
			add(v1.ResourceMemory, *evictionapi.GetThresholdQuantity(t.Value, &c))
		case evictionapi.SignalNodeFsAvailable:
			c := capacity[v1.ResourceEphemeralStorage]
			add(v1.ResourceEphemeralStorage, *evictionapi.GetThresholdQuantity(t.Value, &c))
		}
	}
	return out
}

// machineInfo is what cadvisor would report for the node model: two
// hyper-threads per core, cores and memory split evenly over NUMA nodes.
func machineInfo(n Node) *cadvisorapi.MachineInfo {
	numa := max(n.NUMANodes, 1)
	m := &cadvisorapi.MachineInfo{
		NumCores:         n.CPUs,
		NumPhysicalCores: n.CPUs / 2,
		NumSockets:       numa,
		MemoryCapacity:   uint64(n.MemoryBytes),
		Timestamp:        time.Now(),
	}
	coresPerNode := n.CPUs / 2 / numa
	for id := 0; id < numa; id++ {
		node := cadvisorapi.Node{Id: id, Memory: uint64(n.MemoryBytes) / uint64(numa)}
		for k := 0; k < coresPerNode; k++ {
			core := id*coresPerNode + k
			node.Cores = append(node.Cores, cadvisorapi.Core{Id: core, SocketID: id, Threads: []int{2 * core, 2*core + 1}})
		}
		m.Topology = append(m.Topology, node)
	}
	return m
}
