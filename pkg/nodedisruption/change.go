package nodedisruption

import (
	"path"
	"reflect"
	"sort"
	"strings"
)

// Change is what a MachineConfig change touches on a node, as MCO's daemon
// diffs two configurations (newMachineConfigDiff).
type Change struct {
	// Reboots names what always reboots ("kernelArguments"), "" if nothing.
	Reboots string
	// Files and Units are the paths and unit names added, removed or
	// changed (a unit counts as changed when one of its drop-ins does).
	Files []string
	Units []string
	// SSHKey: the passwd section changed.
	SSHKey bool
}

// Touches reports whether the change reaches a node at all.
func (c Change) Touches() bool {
	return c.Reboots != "" || len(c.Files) > 0 || len(c.Units) > 0 || c.SSHKey
}

// Diff compares two MachineConfig specs (spec maps; nil for an object
// created or deleted, which adds or removes everything it holds). A part
// of the spec it does not know is read as a reboot: MCO either reboots for
// it or refuses it, and neither is lighter than a reboot.
func Diff(oldSpec, newSpec map[string]any) Change {
	var c Change
	for _, k := range unionKeys(oldSpec, newSpec) {
		if k == "config" || reflect.DeepEqual(oldSpec[k], newSpec[k]) {
			continue
		}
		c.Reboots = k
		return c
	}
	oldCfg, _ := oldSpec["config"].(map[string]any)
	newCfg, _ := newSpec["config"].(map[string]any)
	for _, k := range unionKeys(oldCfg, newCfg) {
		o, n := oldCfg[k], newCfg[k]
		if reflect.DeepEqual(o, n) {
			continue
		}
		switch k {
		case "ignition":
			// The version is how the fragment is spelled; MCO converts every
			// fragment to one spec before it diffs. Anything else there
			// (config merges, timeouts, security) is not reconciled.
			if !reflect.DeepEqual(without(o, "version"), without(n, "version")) {
				c.Reboots = "config.ignition"
				return c
			}
		case "passwd":
			c.SSHKey = true
		case "storage":
			for _, s := range unionKeys(asMap(o), asMap(n)) {
				if s == "files" {
					continue
				}
				if !reflect.DeepEqual(asMap(o)[s], asMap(n)[s]) {
					c.Reboots = "config.storage." + s
					return c
				}
			}
			c.Files = keyedDiff(asMap(o)["files"], asMap(n)["files"], "path")
		case "systemd":
			for _, s := range unionKeys(asMap(o), asMap(n)) {
				if s != "units" && !reflect.DeepEqual(asMap(o)[s], asMap(n)[s]) {
					c.Reboots = "config.systemd." + s
					return c
				}
			}
			c.Units = keyedDiff(asMap(o)["units"], asMap(n)["units"], "name")
		default:
			c.Reboots = "config." + k
			return c
		}
	}
	return c
}

// Actions is what MCO does for change under policy p
// (calculatePostConfigChangeNodeDisruptionActionFromMCDiffs): a reboot as
// soon as anything has no policy; a None beside other actions is dropped.
func (p Policy) Actions(c Change) []Action {
	if c.Reboots != "" {
		return []Action{{Type: Reboot}}
	}
	var out []Action
	for _, f := range c.Files {
		pol, ok := p.file(f)
		if !ok {
			return []Action{{Type: Reboot}}
		}
		out = append(out, pol...)
	}
	for _, u := range c.Units {
		pol, ok := p.unit(u)
		if !ok {
			return []Action{{Type: Reboot}}
		}
		out = append(out, pol...)
	}
	if c.SSHKey {
		out = append(out, p.SSHKey...)
	}
	return settle(out)
}

// settle applies MCO's rules to a list of actions: one Reboot wins; None
// beside anything else disappears; nothing at all is None.
func settle(acts []Action) []Action {
	var kept []Action
	for _, a := range acts {
		if a.Type == Reboot {
			return []Action{{Type: Reboot}}
		}
		if a.Type != None {
			kept = append(kept, a)
		}
	}
	if len(kept) == 0 {
		return []Action{{Type: None}}
	}
	return kept
}

// file finds the policy for a path: the entry for the path itself or for
// the deepest directory above it (MCO's FindClosestFilePolicyPathMatch).
func (p Policy) file(f string) ([]Action, bool) {
	best, found := -1, false
	var acts []Action
	for _, pol := range p.Files {
		if !covers(pol.Path, f) || len(pol.Path) <= best {
			continue
		}
		best, acts, found = len(pol.Path), pol.Actions, true
	}
	return acts, found
}

// covers is MCO's match of a policy path (pkg/controller/common/helpers.go,
// FindClosestFilePolicyPathMatch and IsSubdirectory): the same path as
// written, or a file under it, the policy path cleaned and a separator
// added. So "/" covers no file ("//" prefixes no clean path), and a
// reboot is never predicted lighter than MCO takes it.
func covers(policy, file string) bool {
	return policy == file || strings.HasPrefix(path.Clean(file), path.Clean(policy)+"/")
}

func (p Policy) unit(name string) ([]Action, bool) {
	for _, pol := range p.Units {
		if pol.Name == name {
			return pol.Actions, true
		}
	}
	return nil, false
}

// keyedDiff lists the keys of list entries added, removed or changed.
func keyedDiff(o, n any, key string) []string {
	om, nm := byKey(o, key), byKey(n, key)
	var out []string
	for _, k := range unionKeys(om, nm) {
		if !reflect.DeepEqual(om[k], nm[k]) {
			out = append(out, k)
		}
	}
	return out
}

func byKey(v any, key string) map[string]any {
	items, _ := v.([]any)
	out := make(map[string]any, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		k, _ := m[key].(string)
		out[k] = it
	}
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func without(v any, key string) map[string]any {
	out := map[string]any{}
	for k, x := range asMap(v) {
		if k != key {
			out[k] = x
		}
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
