// Package reservation holds the memory arithmetic a kubelet checks at start
// when its memory manager runs the Static policy, so a KubeletConfig the
// autopilot renders is one the kubelet accepts.
//
// The kubelet (pkg/kubelet/cm/memorymanager/memory_manager.go,
// validateReservedMemory) sums reservedMemory over all NUMA nodes per
// resource and requires it to equal the node-allocatable reservation
// (pkg/kubelet/cm/node_container_manager_linux.go,
// GetNodeAllocatableReservation): systemReserved + kubeReserved + the hard
// eviction threshold memory.available. When it does not, the kubelet does not
// start and the node stays NotReady.
package reservation

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Memory is what a kubelet sets aside from a node's memory.
type Memory struct {
	KubeReserved   resource.Quantity
	SystemReserved resource.Quantity
	// EvictionHard is the evictionHard memory.available threshold.
	EvictionHard resource.Quantity
}

// Default is the reservation of a VM host running the static CPU and memory
// managers. systemReserved is fixed, not auto-sized: auto-sizing computes it
// per node at boot, and no fixed reservedMemory could then match it. 1Gi is
// what MCO itself reserves when auto-sizing is off (SYSTEM_RESERVED_MEMORY in
// /etc/node-sizing-enabled.env); kubeReserved adds 1Gi for the kubelet and
// CRI-O under VM density; 100Mi is the kubelet's and OpenShift's default hard
// eviction threshold, set explicitly so the sum cannot drift from it.
var Default = Memory{
	KubeReserved:   resource.MustParse("1Gi"),
	SystemReserved: resource.MustParse("1Gi"),
	EvictionHard:   resource.MustParse("100Mi"),
}

// Total is the memory the memory manager must see reserved, summed over
// NUMA nodes.
func (m Memory) Total() resource.Quantity {
	t := m.KubeReserved.DeepCopy()
	t.Add(m.SystemReserved)
	t.Add(m.EvictionHard)
	return t
}

// TemplateValues are Default's values for a template (function
// memoryReservation): kubeReserved, systemReserved, evictionHard and
// numaNode0 (strings), the whole reservation placed on NUMA node 0, which
// every node has; evictionDefaults, the other default eviction signals
// (DefaultEvictionSignals but memory.available), by signal.
func TemplateValues() map[string]any {
	total := Default.Total()
	disk := map[string]string{}
	for k, v := range DefaultEvictionSignals {
		if k != "memory.available" {
			disk[k] = v
		}
	}
	return map[string]any{
		"kubeReserved":     Default.KubeReserved.String(),
		"systemReserved":   Default.SystemReserved.String(),
		"evictionHard":     Default.EvictionHard.String(),
		"numaNode0":        total.String(),
		"evictionDefaults": disk,
	}
}

// kubeletDefaultEvictionHard is the kubelet's memory.available default
// (pkg/kubelet/eviction/defaults_linux.go), used when evictionHard is unset.
var kubeletDefaultEvictionHard = resource.MustParse("100Mi")

// DefaultEvictionSignals are the hard-eviction thresholds the kubelet
// applies when evictionHard is unset (pkg/kubelet/eviction/defaults_linux.go,
// DefaultEvictionHard). An evictionHard map replaces them whole: the
// kubelet fills in defaults only for a nil map (cmd/kubelet/app/server.go,
// loadConfigFile; mergeDefaultEvictionSettings is off by default and
// unknown before OCP 4.20), MCO's kubelet.conf template has no
// evictionHard to merge onto, and a signal left out has no threshold at
// all (eviction.ParseThresholdConfig). So a rendered map names them all.
var DefaultEvictionSignals = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "10%",
	"nodefs.inodesFree":  "5%",
	"imagefs.available":  "15%",
	"imagefs.inodesFree": "5%",
}

// Check verifies a KubeletConfig's spec (as rendered: spec.autoSizingReserved
// and spec.kubeletConfig) against the rules a node enforces:
//   - MCO rejects autoSizingReserved together with systemReserved
//     (pkg/controller/kubelet-config/helpers.go, validateUserKubeletConfig);
//   - an evictionHard map names every default signal
//     (DefaultEvictionSignals): one left out is never evicted on;
//   - with memoryManagerPolicy Static, the reservedMemory sum equals
//     kubeReserved + systemReserved + evictionHard memory.available, and
//     systemReserved memory is set and not auto-sized (the sum could not
//     be known otherwise).
func Check(spec map[string]any) error {
	autoSizing, _ := spec["autoSizingReserved"].(bool)
	kc, _ := spec["kubeletConfig"].(map[string]any)
	if m, ok := kc["evictionHard"].(map[string]any); ok {
		var missing []string
		for signal := range DefaultEvictionSignals {
			if _, ok := m[signal]; !ok {
				missing = append(missing, signal)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf("evictionHard replaces the kubelet's default thresholds whole and leaves out %s: the kubelet would never evict on them (disk pressure unprotected); name every default signal", strings.Join(missing, ", "))
		}
	}
	systemReserved := quantityAt(kc, "systemReserved", "memory")
	if autoSizing && kc["systemReserved"] != nil {
		return errors.New("autoSizingReserved and kubeletConfig.systemReserved together: MCO rejects the KubeletConfig")
	}
	if kc["memoryManagerPolicy"] != "Static" {
		return nil
	}
	if autoSizing {
		return errors.New("memoryManagerPolicy Static with autoSizingReserved: systemReserved is computed per node, so no fixed reservedMemory can equal the reservation and the kubelet would not start")
	}
	if sr, _ := kc["systemReserved"].(map[string]any); sr["memory"] == nil {
		// Without it the node decides: MCO's kubelet template reserves
		// 1Gi up to 4.20 and sizes it per node from 4.21 on workers
		// (createNewKubeletDynamicSystemReservedIgnition, the node-sizing
		// script). Unknown never counts as 0.
		return errors.New("memoryManagerPolicy Static without systemReserved memory: the node reserves its own (1Gi, or sized per node from OpenShift 4.21), so no fixed reservedMemory can be known to equal the reservation; set systemReserved memory")
	}
	want := quantityAt(kc, "kubeReserved", "memory")
	want.Add(systemReserved)
	eviction := kubeletDefaultEvictionHard
	if m, ok := kc["evictionHard"].(map[string]any); ok {
		eviction = resource.Quantity{} // a map without it: no threshold, 0
		if v, ok := m["memory.available"].(string); ok {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return fmt.Errorf("evictionHard memory.available %q: %w", v, err)
			}
			eviction = q
		}
	}
	want.Add(eviction)

	var got resource.Quantity
	list, _ := kc["reservedMemory"].([]any)
	for _, r := range list {
		m, _ := r.(map[string]any)
		got.Add(quantityAt(m, "limits", "memory"))
	}
	if got.Cmp(want) != 0 {
		return fmt.Errorf("reservedMemory sums to %s over NUMA nodes, but kubeReserved + systemReserved + evictionHard memory.available is %s: the kubelet would not start",
			got.String(), want.String())
	}
	return nil
}

func quantityAt(m map[string]any, keys ...string) resource.Quantity {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return resource.Quantity{}
		}
		v = mm[k]
	}
	s, ok := v.(string)
	if !ok {
		return resource.Quantity{}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}
