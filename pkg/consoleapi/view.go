// Package consoleapi serves the OpenShift console plugin: its built files,
// and one read-only view of what the autopilot does and will do (its
// state, each pool's staged and waiting rollouts, each feature's objects)
// to a console user who may read the HyperConverged. The view is made
// from the same evaluation the debug endpoints and the controller read
// (debug.Source); the plugin writes nothing through it: its actions are
// the user's own patches of the HCO, through the console.
package consoleapi

import (
	"sort"
	"strings"
	"time"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Overview is the plugin's one view.
type Overview struct {
	// Generated is when it was made.
	Generated time.Time `json:"generated"`
	HCO       HCORef    `json:"hco"`
	Autopilot Autopilot `json:"autopilot"`
	Pools     []Pool    `json:"pools"`
	Features  []Feature `json:"features"`
	// Notices are the HCO inputs not acted on as written.
	Notices []engine.Notice `json:"notices"`
	// Standby: the replica answering has not reconciled (it waits for the
	// leader lease, or has just started): what it last did is empty.
	Standby bool `json:"standby,omitempty"`
}

// HCORef names the HyperConverged the plugin's actions patch, and the
// annotations it holds now (the plugin patches from them).
type HCORef struct {
	Namespace       string            `json:"namespace"`
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Annotations     map[string]string `json:"annotations"`
}

// Autopilot is the autopilot's own state.
type Autopilot struct {
	// Mode is managed, paused, report-only or list (some assets only).
	Mode string `json:"mode"`
	// Activation is the HCO's platform.kubevirt.io/autopilot as written.
	Activation string   `json:"activation,omitempty"`
	Only       []string `json:"only,omitempty"`
	Window     Window   `json:"window"`
	// Idle says why nothing is written, when that is so.
	Idle                  *report.IdleStatus `json:"idle,omitempty"`
	AdmissionPolicy       string             `json:"admissionPolicy,omitempty"`
	AdmissionPolicyReason string             `json:"admissionPolicyReason,omitempty"`
	LastReconcile         time.Time          `json:"lastReconcile"`
	LastError             string             `json:"lastError,omitempty"`
	Shipped               *shipped.Verdict   `json:"shippedAutopilot,omitempty"`
	// DisabledResources and YieldTo are the HCO's as written.
	DisabledResources string `json:"disabledResources,omitempty"`
	YieldTo           string `json:"yieldTo,omitempty"`
}

// Window is the disruption window: when writes that reboot a pool go.
type Window struct {
	// Value is the annotation as written ("" : none, any time).
	Value string `json:"value,omitempty"`
	// Open: a write that reboots a pool goes now.
	Open bool `json:"open"`
	// NextOpen is when a closed window opens (zero: open, or unknown).
	NextOpen time.Time `json:"nextOpen"`
	// Error says why the value is not understood (then nothing that
	// reboots goes).
	Error string `json:"error,omitempty"`
}

// Pool is one MachineConfigPool: its nodes, and the autopilot's writes
// that roll it. Nodes and VMs are counted, never named: a reader of the
// HCO may not be one of the nodes or of the VMs' namespaces.
type Pool struct {
	Name string `json:"name"`
	// Nodes counts the pool's nodes.
	Nodes int `json:"nodes"`
	// NodesError says why its nodes cannot be told.
	NodesError string `json:"nodesError,omitempty"`
	// Waiting are writes that roll it and wait (staged, settling, held).
	Waiting []Rollout `json:"waiting"`
	// Rolled are the rollouts the autopilot last caused in it.
	Rolled []Rollout `json:"rolled"`
}

// Rollout is one write that rolls a pool.
type Rollout struct {
	Asset   string `json:"asset"`
	Feature string `json:"feature,omitempty"`
	Object  string `json:"object,omitempty"`
	// Outcome is a waiting write's (empty for one that went).
	Outcome engine.Outcome `json:"outcome,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	// HeldBy names the gate's check that holds it: window, pools (busy),
	// settle, fact budget, write budget, dependency, input, ...
	HeldBy string `json:"heldBy,omitempty"`
	// Reboot: MCO drains and reboots the pool's nodes; else Actions are
	// what it does on each node instead.
	Reboot  bool     `json:"reboot"`
	Actions []string `json:"actions,omitempty"`
	// Impact says what draining the pool does to its VMs, in counts.
	Impact string `json:"impact,omitempty"`
	// Goes is when a staged write goes (the window's opening).
	Goes  time.Time `json:"goes"`
	Since time.Time `json:"since"`
}

// Feature is one feature: its switch and its objects.
type Feature struct {
	features.Status
	// SwitchValue is the switch's HCO annotation as written ("": absent).
	SwitchValue string `json:"switchValue,omitempty"`
	// SwitchOn is the switch as the autopilot reads it (the one parser);
	// SwitchError says why the value is not understood.
	SwitchOn    bool           `json:"switchOn"`
	SwitchError string         `json:"switchError,omitempty"`
	Objects     []FeatureAsset `json:"objects"`
}

// FeatureAsset is what is known of one of a feature's objects beyond the
// features view: who it fights, what a person changed.
type FeatureAsset struct {
	Name      string   `json:"name"`
	Drift     []string `json:"drift,omitempty"`
	Opponents []string `json:"opponents,omitempty"`
	// Customizations are a person's annotations in effect on the object
	// (patch, ignore-fields, unmanaged, ...).
	Customizations []string  `json:"customizations,omitempty"`
	Since          time.Time `json:"since"`
}

// waits reports whether st is a write that will go but has not: one the
// gate holds (its check named), or one sent and failed, tried again. An
// asset paused, off, in conflict, report-only or kept by the deletion
// guard waits for a person, not for a pool.
func waits(st report.AssetStatus) bool {
	switch st.HeldBy {
	case gate.ReportOnly, gate.Intent:
		return false
	case "":
		return st.Outcome == engine.Failed || st.Outcome == engine.Refused
	}
	return true
}

// Build makes the overview from an evaluation and what the controller
// last recorded: plain data in, plain data out (no request).
func Build(cat *catalog.Catalog, eval engine.Evaluation, notices []engine.Notice, snap report.Snapshot, now time.Time) Overview {
	rc := eval.Context
	o := Overview{Generated: now, Notices: notices, Pools: []Pool{}, Features: []Feature{}}
	if o.Notices == nil {
		o.Notices = []engine.Notice{}
	}
	if hco := rc.HCOObject(); hco != nil {
		o.HCO = HCORef{Namespace: hco.GetNamespace(), Name: hco.GetName(), ResourceVersion: hco.GetResourceVersion(), Annotations: ours(hco.GetAnnotations())}
	}
	o.Autopilot = autopilot(cat, eval, snap, now)
	o.Standby = snap.Health.LastReconcile.IsZero()

	o.Pools = pools(eval, snap, featuresOf(cat), o.Autopilot.Window)

	byAsset := map[string]*engine.Decision{}
	for i := range eval.Decisions {
		byAsset[eval.Decisions[i].Asset.Name] = &eval.Decisions[i]
	}
	for i, s := range features.Of(cat, rc, eval.Decisions, lastCounted(snap)) {
		f := Feature{Status: s, Objects: []FeatureAsset{}}
		if s.Switch != "" {
			f.SwitchValue, _ = rc.HCOAnnotation(s.Switch)
			on, err := rc.Switch(cat.Features[i].Switch)
			f.SwitchOn = on && err == nil
			if err != nil {
				f.SwitchError = err.Error()
			}
		}
		for _, a := range s.Assets {
			fa := FeatureAsset{Name: a.Name}
			if d := byAsset[a.Name]; d != nil {
				fa.Customizations = d.Customizations
			}
			if st, ok := snap.Asset(a.Name); ok {
				fa.Drift, fa.Opponents, fa.Since = st.Drift, st.Opponents, st.Changed
			}
			f.Objects = append(f.Objects, fa)
		}
		o.Features = append(o.Features, f)
	}
	return o
}

// lastCounted is report.Snapshot.Last with what a waiting rollout does to
// the VMs in counts, not names (Pool).
func lastCounted(snap report.Snapshot) features.Last {
	return func(asset string) (engine.Outcome, string, bool) {
		a, ok := snap.Asset(asset)
		why := a.Reason
		var counts []string
		for _, p := range a.ImpactPools {
			counts = append(counts, "pool "+p.Pool+": "+p.Counts())
		}
		if len(counts) > 0 {
			why += "; when it rolls: " + strings.Join(counts, "; ")
		}
		return a.Outcome, why, ok
	}
}

// ours keeps the HCO's annotations this autopilot reads: the plugin
// shows and patches these, nothing else of the HCO leaves the process.
// nil when the HCO has none at all (a patch then adds the map).
func ours(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, annotations.SwitchPrefix) {
			out[k] = v
		}
	}
	return out
}

func autopilot(cat *catalog.Catalog, eval engine.Evaluation, snap report.Snapshot, now time.Time) Autopilot {
	rc := eval.Context
	act := engine.ActivationOf(rc, cat)
	a := Autopilot{Mode: "managed", Activation: act.Value, Idle: snap.Health.Idle,
		AdmissionPolicy: snap.Health.AdmissionPolicy, AdmissionPolicyReason: snap.Health.AdmissionPolicyReason,
		LastReconcile: snap.Health.LastReconcile, LastError: snap.Health.LastError, Shipped: snap.Health.ShippedAutopilot}
	switch {
	case act.Paused:
		a.Mode = "paused"
	case act.ReportOnly:
		a.Mode = "report-only"
	case act.Only != nil:
		a.Mode = "list"
		for k := range act.Only {
			a.Only = append(a.Only, k)
		}
		sort.Strings(a.Only)
	}
	a.DisabledResources, _ = rc.HCOAnnotation(annotations.DisabledResources)
	a.YieldTo, _ = rc.HCOAnnotation(annotations.YieldTo)
	v, set := rc.HCOAnnotation(annotations.DisruptionWindow)
	a.Window.Value = v
	w, err := annotations.ParseDisruptionWindow(v, set)
	switch {
	case err != nil:
		a.Window.Error = err.Error()
	case w.IsZero() || w.Open(now):
		a.Window.Open = true
	default:
		a.Window.NextOpen = w.NextOpen(now)
	}
	return a
}

// pools lists every MachineConfigPool with the writes that roll it: those
// that wait and those that went, as last recorded.
func pools(eval engine.Evaluation, snap report.Snapshot, featureOf map[string]string, win Window) []Pool {
	rc := eval.Context
	byName := map[string]*Pool{}
	var names []string
	add := func(name string) *Pool {
		if p, ok := byName[name]; ok {
			return p
		}
		p := &Pool{Name: name, Waiting: []Rollout{}, Rolled: []Rollout{}}
		if nodes, err := rc.PoolNodes(name); err != nil {
			p.NodesError = err.Error()
		} else {
			p.Nodes = len(nodes)
		}
		byName[name] = p
		names = append(names, name)
		return p
	}
	for _, u := range rc.Pools {
		add(u.GetName())
	}
	for _, st := range snap.Assets {
		if st.Disruption == nil || !waits(st) {
			continue
		}
		r := Rollout{Asset: st.Asset, Feature: featureOf[st.Asset], Object: st.Object, Outcome: st.Outcome, Reason: st.Reason, HeldBy: st.HeldBy,
			Reboot: st.Disruption.Reboot, Actions: st.Disruption.Actions, Since: st.Changed}
		if st.HeldBy == gate.Window {
			r.Goes = win.NextOpen
		}
		for _, name := range st.Disruption.Rolled() {
			p := add(name)
			pr := r
			for _, ip := range st.ImpactPools {
				if ip.Pool == name {
					pr.Impact = ip.Counts()
				}
			}
			p.Waiting = append(p.Waiting, pr)
		}
	}
	// Newest first.
	for i := len(snap.Rolled) - 1; i >= 0; i-- {
		ro := snap.Rolled[i]
		for _, name := range ro.Disruption.Rolled() {
			p := add(name)
			p.Rolled = append(p.Rolled, Rollout{Object: ro.Object, Reason: ro.What, Reboot: ro.Disruption.Reboot,
				Actions: ro.Disruption.Actions, Since: ro.At})
		}
	}
	sort.Strings(names)
	out := make([]Pool, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}
