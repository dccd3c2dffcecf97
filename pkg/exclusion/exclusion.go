// Package exclusion parses the HCO's disabled-resources annotation: the
// root exclusion list of objects the autopilot must never create or touch.
package exclusion

import (
	"fmt"
	"path"
	"strings"
)

// Rule excludes objects of Kind whose namespace and name match the globs.
type Rule struct {
	Kind      string
	Namespace string // "" matches any namespace
	Name      string
}

// String renders the rule in annotation syntax.
func (r Rule) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Set is a parsed annotation.
type Set struct {
	Rules []Rule
}

// Parse reads "Kind/name, Kind/namespace/name" entries (names and
// namespaces may use * globs). A malformed entry is returned as an error and
// skipped, so it never widens or narrows what the other entries exclude.
func Parse(s string) (Set, []error) {
	var set Set
	var errs []error
	for _, raw := range strings.Split(s, ",") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		parts := strings.Split(e, "/")
		var r Rule
		switch len(parts) {
		case 2:
			r = Rule{Kind: parts[0], Name: parts[1]}
		case 3:
			r = Rule{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
		default:
			errs = append(errs, fmt.Errorf("entry %q: want Kind/name or Kind/namespace/name", e))
			continue
		}
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("entry %q: %w", e, err))
			continue
		}
		set.Rules = append(set.Rules, r)
	}
	return set, errs
}

func (r Rule) validate() error {
	if r.Kind == "" || strings.ContainsAny(r.Kind, "*?[") {
		return fmt.Errorf("kind must be an exact Kind, like MachineConfig")
	}
	if r.Name == "" {
		return fmt.Errorf("name is empty")
	}
	for _, g := range []string{r.Namespace, r.Name} {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q", g)
		}
	}
	return nil
}

// Match returns the first rule excluding the object, if any.
func (s Set) Match(kind, namespace, name string) (Rule, bool) {
	for _, r := range s.Rules {
		if r.Kind != kind {
			continue
		}
		if ok, _ := path.Match(r.Name, name); !ok {
			continue
		}
		if r.Namespace != "" {
			if ok, _ := path.Match(r.Namespace, namespace); !ok {
				continue
			}
		}
		return r, true
	}
	return Rule{}, false
}
