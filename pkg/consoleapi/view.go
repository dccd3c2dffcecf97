// Package consoleapi serves the OpenShift console plugin: its built files,
// and one read-only view of what the autopilot does and will do (its
// state, each pool's staged and waiting rollouts, each feature's objects)
// to a console user who may read the HyperConverged. The view is made
// from the same evaluation the debug endpoints and the controller read
// (debug.Source); the plugin writes nothing through it: its actions are
// the user's own patches of the HCO, through the console.
package consoleapi

import (
	"slices"
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

// maxNodeNames bounds the node names a pool lists; Nodes counts them all.
const maxNodeNames = 10

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
// that roll it.
type Pool struct {
	Name string `json:"name"`
	// Nodes counts the pool's nodes; NodeNames lists the first few.
	Nodes     int      `json:"nodes"`
	NodeNames []string `json:"nodeNames,omitempty"`
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
	// Impact says what draining the pool does to its VMs.
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

// waiting are the outcomes of a write that has not gone yet.
var waiting = []engine.Outcome{engine.Staged, engine.Settling, engine.Throttled, engine.Invalid, engine.Failed, engine.Refused, engine.MissingDependency, engine.Conflict, engine.Paused}

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

	o.Pools = pools(eval, snap, featuresOf(cat), o.Autopilot.Window)

	byAsset := map[string]*engine.Decision{}
	for i := range eval.Decisions {
		byAsset[eval.Decisions[i].Asset.Name] = &eval.Decisions[i]
	}
	for i, s := range features.Of(cat, rc, eval.Decisions, snap.Last) {
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
			p.NodeNames = nodes[:min(len(nodes), maxNodeNames)]
		}
		byName[name] = p
		names = append(names, name)
		return p
	}
	for _, u := range rc.Pools {
		add(u.GetName())
	}
	for _, st := range snap.Assets {
		if st.Disruption == nil || !slices.Contains(waiting, st.Outcome) {
			continue
		}
		r := Rollout{Asset: st.Asset, Feature: featureOf[st.Asset], Object: st.Object, Outcome: st.Outcome, Reason: st.Reason, HeldBy: st.HeldBy,
			Reboot: st.Disruption.Reboot, Actions: st.Disruption.Actions, Impact: st.Impact, Since: st.Changed}
		if st.HeldBy == gate.Window {
			r.Goes = win.NextOpen
		}
		for _, name := range st.Disruption.Rolled() {
			p := add(name)
			p.Waiting = append(p.Waiting, r)
		}
	}
	// Newest first.
	for i := len(snap.Rolled) - 1; i >= 0; i-- {
		ro := snap.Rolled[i]
		for _, name := range ro.Disruption.Rolled() {
			p := add(name)
			p.Rolled = append(p.Rolled, Rollout{Object: ro.Object, Reason: ro.What, Reboot: ro.Disruption.Reboot,
				Actions: ro.Disruption.Actions, Impact: ro.Impact, Since: ro.At})
		}
	}
	sort.Strings(names)
	out := make([]Pool, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out
}
