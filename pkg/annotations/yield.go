package annotations

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultYieldTo are the field managers the autopilot yields to when the
// HCO does not say, each the manager name its controller writes with
// (read from their sources):
//   - argocd-controller: Argo CD's application controller, server-side
//     apply and, since 2.5, client-side apply (argo-cd common/common.go
//     ArgoCDSSAManager; gitops-engine pkg/sync);
//   - argocd-application-controller: older Argo CD client-side applies
//     (the process name as field manager);
//   - kustomize-controller and helm-controller: Flux (fluxcd/pkg ssa
//     Owner.Field is the controller's name);
//   - config-policy-controller: RHACM ConfigurationPolicy enforce (updates
//     under its process name).
//
// kubectl and the operators that own their operands (HCO, CVO) are not
// listed: a person's kubectl edit is drift the autopilot corrects unless
// its object says otherwise (patch, ignore-fields), and an operator's own
// defaults are what the golden config is applied over.
var DefaultYieldTo = []string{"argocd-controller", "argocd-application-controller", "kustomize-controller", "helm-controller", "config-policy-controller"}

// YieldToAccepted is YieldTo's vocabulary.
const YieldToAccepted = `field manager names (as in metadata.managedFields[].manager: 1-128 printable characters, no spaces or commas) separated by commas and/or newlines; "default" for the default list (` +
	"argocd-controller, argocd-application-controller, kustomize-controller, helm-controller, config-policy-controller" + `); "none" alone for no one`

// Yield is the set of field managers whose fields the autopilot leaves to them.
type Yield struct{ managers []string }

// Has reports whether the autopilot yields to manager.
func (y Yield) Has(manager string) bool { return slices.Contains(y.managers, manager) }

// Managers lists them, sorted.
func (y Yield) Managers() []string { return slices.Clone(y.managers) }

// Empty reports whether the autopilot yields to no one.
func (y Yield) Empty() bool { return len(y.managers) == 0 }

// ParseYieldTo reads YieldTo (absent: the default list). A value not
// understood is an *Invalid error, and the Yield returned still holds the
// default list and every entry that was understood: a typo never hands a
// GitOps controller's fields back to the autopilot.
func ParseYieldTo(value string, present bool) (Yield, error) {
	if !present {
		return Yield{managers: sorted(DefaultYieldTo)}, nil
	}
	entries := SplitList(value)
	if len(entries) == 1 && strings.EqualFold(entries[0], "none") {
		return Yield{}, nil
	}
	var out []string
	var bad []string
	for _, e := range entries {
		switch {
		case strings.EqualFold(e, "default"):
			out = append(out, DefaultYieldTo...)
		case strings.EqualFold(e, "none"):
			bad = append(bad, `"none" with other entries`)
		case validManager(e):
			out = append(out, e)
		default:
			bad = append(bad, fmt.Sprintf("%q", e))
		}
	}
	if len(entries) == 0 {
		bad = append(bad, "an empty value")
	}
	if len(bad) > 0 {
		return Yield{managers: sorted(append(out, DefaultYieldTo...))}, &Invalid{Annotation: YieldTo, Value: value, Accepted: YieldToAccepted,
			Detail: "not understood: " + strings.Join(bad, ", ") + "; meanwhile the default list and the entries understood apply"}
	}
	return Yield{managers: sorted(out)}, nil
}

func validManager(m string) bool {
	if m == "" || len(m) > 128 {
		return false
	}
	for _, r := range m {
		if r <= ' ' || r > '~' || r == ',' {
			return false
		}
	}
	return true
}

func sorted(ms []string) []string {
	out := slices.Clone(ms)
	slices.Sort(out)
	return slices.Compact(out)
}
