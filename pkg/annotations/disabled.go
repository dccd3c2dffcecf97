package annotations

import (
	"fmt"
	"path"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/exclusion"
)

// DisabledResourcesAccepted is the disabled-resources vocabulary.
const DisabledResourcesAccepted = `entries Kind/name or Kind/namespace/name, separated by commas and/or newlines; Kind in any case (MachineConfig, machineconfig), names and namespaces may be * ? [ ] globs`

// ParseDisabledResources reads the HCO's root exclusion list. A malformed
// entry is returned as an *Invalid and skipped, so it never widens or
// narrows what the other entries exclude.
func ParseDisabledResources(value string) (exclusion.Set, []error) {
	var set exclusion.Set
	var errs []error
	for _, e := range SplitList(value) {
		parts := strings.Split(e, "/")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		var r exclusion.Rule
		switch len(parts) {
		case 2:
			r = exclusion.Rule{Kind: parts[0], Name: parts[1]}
		case 3:
			r = exclusion.Rule{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
		default:
			errs = append(errs, &Invalid{Annotation: DisabledResources, Value: e, Accepted: DisabledResourcesAccepted, Detail: "want Kind/name or Kind/namespace/name"})
			continue
		}
		if err := validateRule(r); err != nil {
			errs = append(errs, &Invalid{Annotation: DisabledResources, Value: e, Accepted: DisabledResourcesAccepted, Detail: err.Error()})
			continue
		}
		set.Rules = append(set.Rules, r)
	}
	return set, errs
}

func validateRule(r exclusion.Rule) error {
	if r.Kind == "" || strings.ContainsAny(r.Kind, "*?[ \t") {
		return fmt.Errorf("kind must be an exact Kind, like MachineConfig")
	}
	if r.Name == "" {
		return fmt.Errorf("name is empty")
	}
	for _, g := range []string{r.Namespace, r.Name} {
		if strings.ContainsAny(g, " \t") {
			return fmt.Errorf("%q contains whitespace", g)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q", g)
		}
	}
	return nil
}
