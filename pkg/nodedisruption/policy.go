// Package nodedisruption says what the Machine Config Operator does on a
// pool's nodes when a MachineConfig changes: reboot them (after a drain),
// or, when the cluster's node disruption policy covers every file and unit
// the change touches, the policy's lighter actions (restart or reload a
// unit, daemon-reload, a drain alone, nothing).
//
// It follows MCO's daemon (pkg/daemon/update.go,
// calculatePostConfigChangeNodeDisruptionAction): kernel arguments,
// extensions, kernel type, OS image and FIPS always reboot; each changed
// file needs a policy for its path or a directory above it (the longest
// wins), each changed unit one for its name, or the node reboots. The
// policy is the merged one MCO publishes in MachineConfiguration/cluster
// status.nodeDisruptionPolicyStatus.clusterPolicies; MCO writes it only
// where the NodeDisruptionPolicy feature is on, so a cluster without it (or
// whose status lags its spec) is read as "every change reboots", which is
// what MCO's legacy path does with the files the autopilot ships.
package nodedisruption

import (
	"fmt"
	"strings"
)

// Action types, as MCO spells them (Special is MCO's own, for
// registries.conf: a crio reload and a drain unless the change is safe).
const (
	Reboot       = "Reboot"
	Drain        = "Drain"
	Reload       = "Reload"
	Restart      = "Restart"
	DaemonReload = "DaemonReload"
	None         = "None"
	Special      = "Special"
)

// Action is one step MCO takes on each node of the pool.
type Action struct {
	Type string `json:"type"`
	// Unit is the unit a Restart or Reload acts on.
	Unit string `json:"unit,omitempty"`
}

// String reads like the admin would type it: "reboot", "restart
// kubevirt-thp-tuning.service", "daemon-reload".
func (a Action) String() string {
	switch a.Type {
	case DaemonReload:
		return "daemon-reload"
	case Restart, Reload:
		return strings.ToLower(a.Type) + " " + a.Unit
	}
	return strings.ToLower(a.Type)
}

// Drains reports whether actions drain the nodes (every VM there is
// evicted): a reboot, a drain, or MCO's Special (which drains unless the
// registries change is one it judges safe, which cannot be told here).
func Drains(actions []Action) bool {
	for _, a := range actions {
		switch a.Type {
		case Reboot, Drain, Special:
			return true
		}
	}
	return false
}

// Strings renders actions for a report.
func Strings(actions []Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.String()
	}
	return out
}

// Policy is a node disruption policy: actions per file path (a file or a
// directory), per unit name, and for SSH key changes.
type Policy struct {
	Files  []PathPolicy `json:"files,omitempty"`
	Units  []NamePolicy `json:"units,omitempty"`
	SSHKey []Action     `json:"sshkey,omitempty"`
}

// PathPolicy applies to a file at Path or under it.
type PathPolicy struct {
	Path    string   `json:"path"`
	Actions []Action `json:"actions"`
}

// NamePolicy applies to the unit Name (its drop-ins included).
type NamePolicy struct {
	Name    string   `json:"name"`
	Actions []Action `json:"actions"`
}

// ClusterPolicy reads the policy MCO acts on from MachineConfiguration/
// cluster (its unstructured content). ok is false when there is none to act
// on: the object is absent, MCO has not published clusterPolicies, or it
// has not observed the current spec yet (MCO's daemon itself waits for
// that, and until then a change is judged as a reboot). A status that does
// not parse is an error, never an empty policy.
func ClusterPolicy(obj map[string]any) (p Policy, ok bool, err error) {
	if obj == nil {
		return Policy{}, false, nil
	}
	status, _ := obj["status"].(map[string]any)
	nd, _ := status["nodeDisruptionPolicyStatus"].(map[string]any)
	cp, found := nd["clusterPolicies"].(map[string]any)
	if !found {
		return Policy{}, false, nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	gen, observed := meta["generation"], status["observedGeneration"]
	if gen == nil || observed == nil || fmt.Sprint(gen) != fmt.Sprint(observed) {
		// MCO has not published a policy for this spec (both are set
		// once it has).
		return Policy{}, false, nil
	}
	if p.Files, err = pathPolicies(cp["files"]); err != nil {
		return Policy{}, false, err
	}
	if p.Units, err = namePolicies(cp["units"]); err != nil {
		return Policy{}, false, err
	}
	if ssh, _ := cp["sshkey"].(map[string]any); ssh != nil {
		if p.SSHKey, err = actions(ssh["actions"]); err != nil {
			return Policy{}, false, fmt.Errorf("sshkey: %w", err)
		}
	}
	return p, true, nil
}

func pathPolicies(v any) ([]PathPolicy, error) {
	items, _ := v.([]any)
	out := make([]PathPolicy, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		path, _ := m["path"].(string)
		if path == "" {
			return nil, fmt.Errorf("a file policy without a path: %v", it)
		}
		acts, err := actions(m["actions"])
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", path, err)
		}
		out = append(out, PathPolicy{Path: path, Actions: acts})
	}
	return out, nil
}

func namePolicies(v any) ([]NamePolicy, error) {
	items, _ := v.([]any)
	out := make([]NamePolicy, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("a unit policy without a name: %v", it)
		}
		acts, err := actions(m["actions"])
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", name, err)
		}
		out = append(out, NamePolicy{Name: name, Actions: acts})
	}
	return out, nil
}

// actions parses a policy's action list; an action of a type MCO does not
// define, or a restart/reload without its unit, is an error.
func actions(v any) ([]Action, error) {
	items, _ := v.([]any)
	if len(items) == 0 {
		return nil, fmt.Errorf("no actions")
	}
	out := make([]Action, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		a := Action{}
		a.Type, _ = m["type"].(string)
		switch a.Type {
		case Reboot, Drain, DaemonReload, None, Special:
		case Restart, Reload:
			target, _ := m[strings.ToLower(a.Type)].(map[string]any)
			a.Unit, _ = target["serviceName"].(string)
			if a.Unit == "" {
				return nil, fmt.Errorf("%s without a serviceName", a.Type)
			}
		default:
			return nil, fmt.Errorf("unknown action type %q", a.Type)
		}
		out = append(out, a)
	}
	return out, nil
}
