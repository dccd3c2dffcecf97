package nodecheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The protections a node keeps are compared between the kubelet
// configuration it runs with our KubeletConfig and drop-ins and the one it
// runs without them (MCO alone), both as hack/kubelet-check computes them
// (after MCO's merge, node sizing, drop-ins, flags and the kubelet's start-
// time overrides). Weaker is:
//   - a reservation (systemReserved, kubeReserved, per resource) lower or gone;
//   - an eviction threshold (evictionHard, evictionSoft, per signal) lower
//     or gone -- every signal is "available below", so lower evicts later;
//     a soft threshold's grace period longer or gone, evictionMinimumReclaim
//     lower or gone;
//   - enforcement of a reservation (enforceNodeAllocatable keys) gone;
//   - a limit on what pods take from the node (maxPods, podPidsLimit,
//     containerLogMaxSize, containerLogMaxFiles, imageGC thresholds) higher
//     or gone (-1 is no pid limit);
//   - protectKernelDefaults turned off.
// Each weakening fails unless allowed below, with its reason; the same
// reasons, with the vendor sources, are in docs/assets.md (assets
// kubelet-worker and kubelet-master, from assets/metadata.yaml).

// allowance permits one weakening under a condition.
type allowance struct {
	// field is the weakened setting as weakenings name it, e.g.
	// "systemReserved.memory" or "enforceNodeAllocatable[system-reserved-compressible]".
	field string
	// when the allowance holds.
	when   func(j judged) bool
	reason string
}

func cpuManager(j judged) bool { return j.cpuMgr }
func always(judged) bool       { return true }

// allowed is the explicit allow-list.
var allowed = []allowance{
	{
		field:  "maxPods",
		when:   always,
		reason: "VM density: every VM is a virt-launcher pod beside its helpers, so 250 pods caps a large host long before its memory does; the reservations and eviction thresholds, not the pod count, keep the node alive (docs/assets.md, kubelet-worker).",
	},
	{
		field:  "systemReserved.memory",
		when:   cpuManager,
		reason: "the static memory manager needs reservedMemory to equal system + kube reserved + hard eviction memory exactly (kubelet validateReservedMemory), so systemReserved is fixed at 1Gi, and MCO refuses autoSizingReserved beside it (validateUserKubeletConfig): where MCO auto-sizes (workers from 4.21) a large host reserves less for the system than auto-sizing would; kubeReserved 1Gi is added on top (docs/assets.md, kubelet-worker).",
	},
	{
		field:  "enforceNodeAllocatable[system-reserved-compressible]",
		when:   cpuManager,
		reason: "with reservedSystemCPUs MCO drops system-reserved enforcement and clears systemReservedCgroup (generateKubeletIgnFiles), because the kubelet refuses reservedSystemCPUs beside a reserved cgroup (ValidateKubeletConfiguration); the reserved CPUs stay out of exclusive allocation instead (docs/assets.md, kubelet-worker).",
	},
}

// weakenings lists every protection ours weakens against base (v1beta1
// KubeletConfiguration JSON).
func weakenings(base, ours json.RawMessage) ([]string, error) {
	var b, o map[string]any
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(ours, &o); err != nil {
		return nil, err
	}
	var out []string
	weaker := func(field, format string, a ...any) {
		out = append(out, field+": "+fmt.Sprintf(format, a...))
	}
	// Lower is weaker: reservations, thresholds, minimum reclaim.
	for _, m := range []string{"systemReserved", "kubeReserved", "evictionHard", "evictionSoft", "evictionMinimumReclaim"} {
		bm, _ := b[m].(map[string]any)
		om, _ := o[m].(map[string]any)
		for _, k := range sortedKeys(bm) {
			field := m + "." + k
			ov, ok := om[k].(string)
			if !ok {
				weaker(field, "%v dropped", bm[k])
				continue
			}
			lower, err := lowerAmount(bm[k].(string), ov)
			if err != nil {
				weaker(field, "%v", err)
			} else if lower {
				weaker(field, "%v lowered to %v", bm[k], ov)
			}
		}
	}
	// Longer is weaker: soft eviction grace periods.
	bg, _ := b["evictionSoftGracePeriod"].(map[string]any)
	og, _ := o["evictionSoftGracePeriod"].(map[string]any)
	for _, k := range sortedKeys(bg) {
		field := "evictionSoftGracePeriod." + k
		ov, ok := og[k].(string)
		if !ok {
			weaker(field, "%v dropped", bg[k])
			continue
		}
		bd, err1 := time.ParseDuration(bg[k].(string))
		od, err2 := time.ParseDuration(ov)
		if err1 != nil || err2 != nil || od > bd {
			weaker(field, "%v lengthened to %v", bg[k], ov)
		}
	}
	// Gone is weaker: enforcement of reservations.
	keep := map[string]bool{}
	for _, v := range list(o["enforceNodeAllocatable"]) {
		keep[v] = true
	}
	for _, v := range list(b["enforceNodeAllocatable"]) {
		if !keep[v] {
			weaker("enforceNodeAllocatable["+v+"]", "no longer enforced")
		}
	}
	// Higher or unlimited is weaker: limits on what pods take.
	for _, k := range []string{"maxPods", "podPidsLimit", "containerLogMaxFiles", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent"} {
		bv, bok := b[k].(float64)
		ov, ook := o[k].(float64)
		switch {
		case bok && !ook:
			weaker(k, "%v dropped", bv)
		case bok && ((ov < 0) != (bv < 0) && ov < 0 || bv >= 0 && ov > bv):
			weaker(k, "%v raised to %v", bv, ov)
		}
	}
	if bs, ok := b["containerLogMaxSize"].(string); ok {
		ov, _ := o["containerLogMaxSize"].(string)
		bq, err1 := resource.ParseQuantity(bs)
		oq, err2 := resource.ParseQuantity(ov)
		if err1 != nil || err2 != nil || oq.Cmp(bq) > 0 {
			weaker("containerLogMaxSize", "%s raised to %q", bs, ov)
		}
	}
	if b["protectKernelDefaults"] == true && o["protectKernelDefaults"] != true {
		weaker("protectKernelDefaults", "turned off")
	}
	return out, nil
}

// lowerAmount compares two thresholds or quantities of the same form:
// both percentages or both quantities; mixed forms cannot be told apart
// without the node's capacity and count as a finding.
func lowerAmount(base, ours string) (bool, error) {
	bp, bPct := strings.CutSuffix(base, "%")
	op, oPct := strings.CutSuffix(ours, "%")
	switch {
	case bPct && oPct:
		bf, err1 := strconv.ParseFloat(bp, 64)
		of, err2 := strconv.ParseFloat(op, 64)
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("%q or %q is not a percentage", base, ours)
		}
		return of < bf, nil
	case !bPct && !oPct:
		bq, err1 := resource.ParseQuantity(base)
		oq, err2 := resource.ParseQuantity(ours)
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("%q or %q is not a quantity", base, ours)
		}
		return oq.Cmp(bq) < 0, nil
	}
	return false, fmt.Errorf("%s replaced by %s: a percentage and a quantity cannot be compared without the node", base, ours)
}

func sortedKeys(m map[string]any) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func list(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestProtection: nothing ours does weakens a node's protection unless
// the allow-list says why; every allowance is used somewhere, so a stale
// one cannot hide a later weakening.
func TestProtection(t *testing.T) {
	js := judgeKubelets(t)
	used := make([]bool, len(allowed))
	compared := 0
	for _, j := range js {
		if len(j.ours.Errors) > 0 || len(j.baseline.Errors) > 0 {
			continue // TestKubelet reports it
		}
		compared++
		ws, err := weakenings(j.baseline.Effective, j.ours.Effective)
		if err != nil {
			t.Fatalf("%s: %v", j.what, err)
		}
	next:
		for _, w := range ws {
			field, _, _ := strings.Cut(w, ": ")
			for i, a := range allowed {
				if a.field == field && a.when(j) {
					used[i] = true
					continue next
				}
			}
			t.Errorf("%s: weakens %s", j.what, w)
		}
	}
	if compared == 0 {
		t.Fatal("no kubelet was compared: the matrix lost them")
	}
	for i, a := range allowed {
		if !used[i] {
			t.Errorf("allowance %s is never needed: remove it (and its note in docs/assets.md)", a.field)
		}
	}
}
