// Package exclusion matches objects against the HCO's disabled-resources
// annotation (parsed by annotations.ParseDisabledResources): the root
// exclusion list of objects the autopilot must never create or touch.
package exclusion

import (
	"path"
	"slices"
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

// Match returns the first rule excluding the object, if any.
func (s Set) Match(kind, namespace, name string) (Rule, bool) {
	for _, r := range s.Rules {
		// Kinds in any case, as kubectl takes them (machineconfig).
		if !strings.EqualFold(r.Kind, kind) {
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

// Identity names one object.
type Identity struct{ Kind, Namespace, Name string }

// Unmatched returns the rules that match none of objs: a typo, or a kind
// the autopilot does not manage, which leaves the object it meant managed.
func (s Set) Unmatched(objs []Identity) []Rule {
	var out []Rule
	for _, r := range s.Rules {
		one := Set{Rules: []Rule{r}}
		if !slices.ContainsFunc(objs, func(o Identity) bool { _, hit := one.Match(o.Kind, o.Namespace, o.Name); return hit }) {
			out = append(out, r)
		}
	}
	return out
}
