package reservation

import (
	"strings"
	"testing"
)

func spec(autoSizing bool, kc map[string]any) map[string]any {
	return map[string]any{"autoSizingReserved": autoSizing, "kubeletConfig": kc}
}

func static(kube, system, eviction, numa0 string) map[string]any {
	kc := map[string]any{
		"memoryManagerPolicy": "Static",
		"kubeReserved":        map[string]any{"memory": kube},
		"reservedMemory":      []any{map[string]any{"numaNode": int64(0), "limits": map[string]any{"memory": numa0}}},
	}
	if system != "" {
		kc["systemReserved"] = map[string]any{"memory": system}
	}
	if eviction != "" {
		m := map[string]any{}
		for k, v := range DefaultEvictionSignals {
			m[k] = v
		}
		m["memory.available"] = eviction
		kc["evictionHard"] = m
	}
	return kc
}

func TestCheck(t *testing.T) {
	v := TemplateValues()
	for name, c := range map[string]struct {
		spec map[string]any
		want string // substring of the error; "" = accepted
	}{
		"default values":                        {spec(false, static(v["kubeReserved"].(string), v["systemReserved"].(string), v["evictionHard"].(string), v["numaNode0"].(string))), ""},
		"the old template (1124Mi, auto)":       {spec(true, static("1Gi", "", "", "1124Mi")), "autoSizingReserved"},
		"a sum that leaves out system reserved": {spec(false, static("1Gi", "1Gi", "100Mi", "1124Mi")), "sums to 1124Mi"},
		"kubelet default eviction":              {spec(false, static("1Gi", "1Gi", "", "2148Mi")), ""},
		"split over two NUMA nodes": {spec(false, map[string]any{
			"memoryManagerPolicy": "Static", "kubeReserved": map[string]any{"memory": "1Gi"}, "systemReserved": map[string]any{"memory": "1Gi"},
			"reservedMemory": []any{
				map[string]any{"numaNode": int64(0), "limits": map[string]any{"memory": "1048Mi"}},
				map[string]any{"numaNode": int64(1), "limits": map[string]any{"memory": "1100Mi"}},
			}}), ""},
		// No systemReserved: the node reserves its own, 1Gi up to 4.20 (MCO's
		// kubelet template) or sized per node from 4.21 (the node-sizing
		// script): never 0, and not known here.
		"Static without systemReserved":    {spec(false, static("1Gi", "", "100Mi", "1124Mi")), "without systemReserved memory"},
		"auto-sizing with system reserved": {spec(true, map[string]any{"systemReserved": map[string]any{"memory": "1Gi"}}), "MCO rejects"},
		"no memory manager, auto-sizing":   {spec(true, map[string]any{"maxPods": int64(500)}), ""},
		// A map replaces the kubelet's defaults whole: a signal left out
		// has no threshold (with or without the memory manager).
		"evictionHard with memory only": {spec(true, map[string]any{"evictionHard": map[string]any{"memory.available": "100Mi"}}),
			"leaves out imagefs.available, imagefs.inodesFree, nodefs.available, nodefs.inodesFree"},
		"evictionHard without memory": {spec(false, map[string]any{"evictionHard": map[string]any{"nodefs.available": "10%", "nodefs.inodesFree": "5%",
			"imagefs.available": "15%", "imagefs.inodesFree": "5%"}}), "leaves out memory.available"},
	} {
		err := Check(c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: rejected: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error with %q", name, err, c.want)
		}
	}
	if v["numaNode0"] != "2148Mi" {
		t.Errorf("1Gi + 1Gi + 100Mi = %s", v["numaNode0"])
	}
}
