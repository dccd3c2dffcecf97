package main

// Node sizing: what MCO's kubelet-auto-node-size.service computes at boot
// from /etc/node-sizing-enabled.env (templates/common/_base/files/
// kubelet-auto-sizing.yaml, dynamic-system-reserved-calc.sh, version 2):
// with NODE_SIZING_ENABLED=true memory is 1 GiB up to 8 GiB, plus 6% of
// the next GiB up to 6.72 GiB (the script subtracts 112 there), plus 2%
// of what is left, rounded to whole GiB; CPU is 0.06 + 0.012 per further
// CPU, two decimals, at least 0.5; ephemeral storage keeps the env's
// value. With false the env's three values are used as they are.

import (
	"fmt"
	"math"
	"strconv"

	cadvisorapi "github.com/google/cadvisor/info/v1"
)

func systemReserved(s Sizing, m *cadvisorapi.MachineInfo) (map[string]string, error) {
	if !s.Enabled {
		return map[string]string{"memory": s.Memory, "cpu": s.CPU, "ephemeral-storage": s.ES}, nil
	}
	if m.NumCores < 1 {
		return nil, fmt.Errorf("node model has no CPU")
	}
	// free -g: whole GiB, rounded down.
	total := float64(m.MemoryCapacity >> 30)
	mem := 1.0
	if total <= 8 {
		total = 0
	} else {
		total -= 8
	}
	if total <= 120 {
		mem += total * 0.06
		total = 0
	} else {
		mem += 6.72
		total -= 112
	}
	mem += total * 0.02
	cpu := 0.06
	if m.NumCores > 1 {
		cpu = math.Round((0.06+0.012*float64(m.NumCores-1))*100) / 100
	}
	cpu = math.Max(cpu, 0.5)
	return map[string]string{
		"memory":            fmt.Sprintf("%dGi", int(mem+0.5)),
		"cpu":               strconv.FormatFloat(cpu, 'f', -1, 64),
		"ephemeral-storage": s.ES,
	}, nil
}

// sizingDropInFile is the 20-auto-sizing.conf the 5.0 script writes.
func sizingDropInFile(r map[string]string) string {
	return fmt.Sprintf("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsystemReserved:\n  cpu: %q\n  memory: %q\n  ephemeral-storage: %q\n",
		r["cpu"], r["memory"], r["ephemeral-storage"])
}
