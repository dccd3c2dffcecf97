// Package report tells an admin what the autopilot did: the last outcome
// of every asset and tombstone, the HCO inputs not acted on, why it is
// idle, as a read-only Snapshot (the debug endpoints, tests), metrics for
// every outcome, one log line per action (none for a no-op) and Events
// deduplicated per episode, HCO-input warnings in their own key space.
package report

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// AssetStatus is the last recorded state of one asset.
type AssetStatus struct {
	Asset   string         `json:"asset"`
	Outcome engine.Outcome `json:"outcome"`
	Reason  string         `json:"reason,omitempty"`
	Object  string         `json:"object,omitempty"`
	// Identity is the object's key (engine.Identity): its write budget.
	Identity  string   `json:"-"`
	Drift     []string `json:"drift,omitempty"`
	Opponents []string `json:"opponents,omitempty"`
	// Impact says what the pool's rollout does to its VMs, for a write
	// that reboots a pool, sent or waiting.
	Impact string `json:"impact,omitempty"`
	// ImpactPools is Impact as data, per pool.
	ImpactPools []impact.Pool `json:"-"`
	// Disruption is what the write (or deletion) does to nodes, as the
	// gate judged it (engine.Judged), when it reaches any: the pools a
	// staged or sent rollout is for.
	Disruption *engine.Disruption `json:"disruption,omitempty"`
	// HeldBy names the gate's check that holds the write ("window",
	// "pools", "settle", "fact budget", ...: gate.Order), when one does.
	HeldBy string `json:"heldBy,omitempty"`
	// Deferred are the fields left to a declared owner (platform.kubevirt.io/
	// yield-to).
	Deferred []engine.Deferral `json:"deferred,omitempty"`
	// ObservedResourceVersion is the live object's resourceVersion this
	// outcome was decided on ("" when absent).
	ObservedResourceVersion string                     `json:"observedResourceVersion,omitempty"`
	Changed                 time.Time                  `json:"changed"`
	Desired                 *unstructured.Unstructured `json:"-"`
}

// Reporter records what each reconcile did and tells an admin: the last
// outcome of every asset (a read-only Snapshot), metrics for every
// outcome, one log line per action, and Events deduplicated per episode.
// It is safe for concurrent use (the debug endpoints read it).
type Reporter struct {
	recorder events.EventRecorder

	mu     sync.Mutex
	assets map[string]AssetStatus
	// lastEvent dedups events: one per distinct (subject, reason, message).
	lastEvent map[string]string
	// series remembers label sets set per asset, to delete them when they go stale.
	series map[string][]series

	tombstones []tombstone.Result
	// rolled are the last rollouts sent, oldest first (this process's:
	// the PoolRollout Events on the HCO say the same across restarts).
	rolled        []Rollout
	lastReconcile time.Time
	lastError     string
	hcoRV         string
	idle          IdleStatus
	// beside is the autopilot OpenShift Virtualization ships, as last
	// judged.
	beside shipped.Verdict
}

// New returns a Reporter recording Events through recorder.
func New(recorder events.EventRecorder) *Reporter {
	return &Reporter{recorder: recorder, assets: map[string]AssetStatus{}, lastEvent: map[string]string{}, series: map[string][]series{}}
}

// Reconciled records the end of a reconcile that started from the HCO
// at hcoRV, and its error (nil: none).
func (r *Reporter) Reconciled(err error, hcoRV string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastReconcile = time.Now()
	r.hcoRV = hcoRV
	r.lastError = ""
	if err != nil {
		r.lastError = err.Error()
	}
}

// Last returns the last recorded status of one asset.
func (r *Reporter) Last(asset string) (AssetStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.assets[asset]
	return s, ok
}

// Snapshot is a copy of what was last recorded: every asset's status
// (sorted by name), the tombstones', and the autopilot's health.
type Snapshot struct {
	Assets     []AssetStatus
	Tombstones []tombstone.Result
	Health     Health
	// Throttle is the write budget of each asset's object, by object key
	// (filled by the controller, which owns the budgets).
	Throttle map[string]throttle.State
	// Rolled are the last rollouts this process sent, oldest first.
	Rolled []Rollout
}

// Health summarizes the autopilot for /debug/health.
type Health struct {
	LastReconcile time.Time `json:"lastReconcile"`
	// HCOResourceVersion is the HCO resourceVersion the last finished
	// reconcile started from.
	HCOResourceVersion string `json:"hcoResourceVersion,omitempty"`
	LastError          string `json:"lastError,omitempty"`
	// Idle says why nothing is written or deleted, when that is so.
	Idle *IdleStatus `json:"idle,omitempty"`
	// Unsynced lists kinds whose watch has not synced: their assets fail,
	// the others converge. (The controller fills it and the next two.)
	Unsynced  []string `json:"unsyncedKinds,omitempty"`
	Watched   []string `json:"watchedKinds"`
	Throttled int      `json:"throttledObjects"`
	// AdmissionPolicy is whether the admission policy bounding the
	// autopilot's own writes is in place (pkg/admission), and why not.
	AdmissionPolicy       string `json:"admissionPolicy,omitempty"`
	AdmissionPolicyReason string `json:"admissionPolicyReason,omitempty"`
	// TLSProfile is the TLS profile the secure endpoints serve (the
	// cluster's, pkg/tlsprofile).
	TLSProfile string `json:"tlsProfile,omitempty"`
	// ShippedAutopilot is the autopilot OpenShift Virtualization ships,
	// when one was found or could not be read (pkg/shipped).
	ShippedAutopilot *shipped.Verdict `json:"shippedAutopilot,omitempty"`
}

// Snapshot returns a copy of what was last recorded.
func (r *Reporter) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{Assets: make([]AssetStatus, 0, len(r.assets)), Tombstones: append([]tombstone.Result(nil), r.tombstones...), Rolled: slices.Clone(r.rolled),
		Health: Health{LastReconcile: r.lastReconcile, HCOResourceVersion: r.hcoRV, LastError: r.lastError}}
	for _, a := range r.assets {
		s.Assets = append(s.Assets, a)
	}
	sort.Slice(s.Assets, func(i, j int) bool { return s.Assets[i].Asset < s.Assets[j].Asset })
	if r.idle.Reason != "" {
		i := r.idle
		s.Health.Idle = &i
	}
	if r.beside.State != "" && r.beside.State != shipped.Absent {
		b := r.beside
		s.Health.ShippedAutopilot = &b
	}
	return s
}

// Last is what was last done with an asset and why (features.Last), with
// what a waiting rollout would do to the pool's VMs.
func (s Snapshot) Last(asset string) (engine.Outcome, string, bool) {
	a, ok := s.Asset(asset)
	why := a.Reason
	if a.Impact != "" {
		why += "; when it rolls: " + a.Impact
	}
	return a.Outcome, why, ok
}

// Asset returns one asset's status from the snapshot.
func (s Snapshot) Asset(name string) (AssetStatus, bool) {
	i := sort.Search(len(s.Assets), func(i int) bool { return s.Assets[i].Asset >= name })
	if i < len(s.Assets) && s.Assets[i].Asset == name {
		return s.Assets[i], true
	}
	return AssetStatus{}, false
}

// Asset records what a reconcile did with one asset (res, from decision
// d) and reports it: status, metrics, a log line for an action, Events.
func (r *Reporter) Asset(ctx context.Context, hco *unstructured.Unstructured, d *engine.Decision, res engine.Result) {
	name := d.Asset.Name
	target := d.Target()
	objKey, id := "", ""
	if target != nil {
		objKey, id = engine.ObjectKey(target), engine.Identity(target)
	}
	st := AssetStatus{Asset: name, Outcome: res.Outcome, Reason: res.Reason, Object: objKey, Identity: id, Impact: res.Impact, ImpactPools: res.ImpactPools, HeldBy: res.HeldBy,
		Drift: res.Drift, Opponents: res.Opponents, Deferred: d.Deferred, Changed: time.Now(), Desired: d.Desired}
	if d.Live != nil {
		st.ObservedResourceVersion = d.Live.GetResourceVersion()
	}
	if dis := engine.Judged(d, res); dis.Reboot || len(dis.Actions) > 0 {
		st.Disruption = &dis
	}

	r.mu.Lock()
	prev, had := r.assets[name]
	if had && prev.Outcome == st.Outcome && prev.Reason == st.Reason {
		st.Changed = prev.Changed
	}
	r.assets[name] = st
	r.mu.Unlock()

	r.metricsFor(d, res, target)
	changed := !had || prev.Outcome != st.Outcome || prev.Reason != st.Reason
	r.logAction(ctx, d, res, target, changed)
	if had && prev.Outcome == engine.MissingDependency && res.Outcome != engine.MissingDependency {
		log.FromContext(ctx).Info("dependency installed: the asset is evaluated again", "asset", name, "object", objKey, "action", "dependency-back", "outcome", string(res.Outcome))
	}

	subject, owner := target, eventOwner(name)
	switch res.Outcome {
	case engine.Applied:
		reason := "Created"
		switch {
		case d.Live != nil && res.Updated:
			// What it renders changed (a switch, a patch, the facts), not
			// the object.
			reason = "Updated"
		case d.Live != nil:
			// Someone changed a field it sets (or it cannot tell): put back.
			reason = "DriftCorrected"
		}
		r.event(hco, subject, corev1.EventTypeNormal, reason, res.Reason)
		switch {
		case res.Disruption != nil:
			// As the gate judged it (labels alone reach no node unless
			// they move the object; a replaced object's deletion does).
			r.rollout(hco, subject, *res.Disruption, res.Reason, res.Impact)
		case d.Live == nil || engine.ReachesNodes(res.Drift) || d.MovesPools:
			// Labels and annotations do not reach a node; spec does.
			r.rollout(hco, subject, engine.DisruptionOf(d), res.Reason, res.Impact)
		}
	case engine.Deleted:
		r.event(hco, subject, corev1.EventTypeNormal, "Deleted", res.Reason)
		r.rollout(hco, subject, engine.Judged(d, res), res.Reason, res.Impact)
	case engine.Retained:
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "Retained", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Throttled:
		// One event per episode: the message names fields and managers,
		// not the remaining wait, so it stays the same while the fight lasts.
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "Thrashing", res.Reason)
	case engine.Invalid:
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, invalidEvent(engine.InvalidAnnotation(d, res)),
			fmt.Sprintf("asset %s: %s is left as it is: %s", name, objKey, res.Reason))
	case engine.MissingDependency:
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "MissingDependency", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Conflict:
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "Conflict", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Settling:
		r.eventOnce(owner, hco, subject, corev1.EventTypeNormal, "Settling", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Drifted:
		// One per change of state: the message names the fields.
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "Drifted", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Staged:
		// One per episode: the message names when the window opens, the
		// same until then.
		r.eventOnce(owner, hco, subject, corev1.EventTypeNormal, "Staged", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Failed:
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "SyncFailed", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Refused:
		// The API server's own words, once per episode: a refusal is not
		// a fight, and it stands until a person changes the permission,
		// the admission rule or the object.
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, "WriteRefused", fmt.Sprintf("asset %s: %s", name, res.Reason))
	default:
		if d.ReportOnly && res.Outcome == engine.Unchanged && had && prev.Outcome == engine.Drifted {
			r.event(hco, subject, corev1.EventTypeNormal, "Compliant", fmt.Sprintf("asset %s: report-only: the object is again as the autopilot would apply it", name))
		}
		// Quiet outcomes: forget the dedup state so a recurrence is reported
		// again (except a warning that still stands).
		r.forgetEvents(owner, unresolvedReason, deferredReason)
	}
	if len(d.Deferred) > 0 {
		// Once per object and set of fields (the message names them all),
		// whatever the outcome.
		r.eventOnce(owner, hco, subject, corev1.EventTypeNormal, deferredReason, "asset "+name+": "+deferredMessage(d.Deferred))
	} else {
		r.forgetEvent(owner, deferredReason)
	}
	if len(d.Unresolved) > 0 {
		r.eventOnce(owner, hco, subject, corev1.EventTypeWarning, unresolvedReason,
			fmt.Sprintf("annotation %s on %s: pointer(s) %s address nothing on the object and are ignored; the rest of the annotation applies",
				annotations.IgnoreFields, objKey, strings.Join(d.Unresolved, ", ")))
	} else {
		r.forgetEvent(owner, unresolvedReason)
	}
}

// deferredReason is the Event reason of fields left to their owners.
const deferredReason = "Deferred"

// deferredMessage says what is left to whom: fields to the managers the
// HCO's yield-to names, kubelet settings to an admin's KubeletConfig.
func deferredMessage(ds []engine.Deferral) string {
	var yielded, kubelet []engine.Deferral
	for _, d := range ds {
		if d.Owner == engine.OwnerKubeletConfig {
			kubelet = append(kubelet, d)
		} else {
			yielded = append(yielded, d)
		}
	}
	var parts []string
	if len(yielded) > 0 {
		parts = append(parts, fmt.Sprintf("fields left to their declared owners (%s), never forced: %s", annotations.YieldTo, deferredText(yielded)))
	}
	if len(kubelet) > 0 {
		parts = append(parts, "kubelet settings left out of the drop-in because an admin's KubeletConfig for the same pool sets them (its values stay in effect; remove them there to hand them to the autopilot): "+deferredText(kubelet))
	}
	return strings.Join(parts, "; ")
}

func deferredText(ds []engine.Deferral) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return strings.Join(out, ", ")
}
