package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// AssetStatus is the last recorded state of one asset.
type AssetStatus struct {
	Asset     string         `json:"asset"`
	Outcome   engine.Outcome `json:"outcome"`
	Reason    string         `json:"reason,omitempty"`
	Object    string         `json:"object,omitempty"`
	Drift     []string       `json:"drift,omitempty"`
	Opponents []string       `json:"opponents,omitempty"`
	// ObservedResourceVersion is the live object's resourceVersion this
	// outcome was decided on ("" when absent).
	ObservedResourceVersion string                     `json:"observedResourceVersion,omitempty"`
	Changed                 time.Time                  `json:"changed"`
	Desired                 *unstructured.Unstructured `json:"-"`
}

type statusStore struct {
	mu     sync.Mutex
	assets map[string]AssetStatus
	// lastEvent dedups events: one per distinct (subject, reason, message).
	lastEvent map[string]string
	// series remembers label sets set per asset, to delete them when they go stale.
	series map[string][]series

	tombstones    []tombstone.Result
	lastReconcile time.Time
	lastError     string
	hcoRV         string
	idle          IdleStatus
}

func (s *statusStore) reconciled(err error, hcoRV string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastReconcile = time.Now()
	s.hcoRV = hcoRV
	s.lastError = ""
	if err != nil {
		s.lastError = err.Error()
	}
}

func newStatusStore() *statusStore {
	return &statusStore{assets: map[string]AssetStatus{}, lastEvent: map[string]string{}, series: map[string][]series{}}
}

// Status returns the last status of one asset.
func (r *Reconciler) Status(asset string) (AssetStatus, bool) {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	s, ok := r.status.assets[asset]
	return s, ok
}

// Statuses returns the last status of every asset, sorted by name.
func (r *Reconciler) Statuses() []AssetStatus {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	out := make([]AssetStatus, 0, len(r.status.assets))
	for _, s := range r.status.assets {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asset < out[j].Asset })
	return out
}

func (r *Reconciler) record(ctx context.Context, hco *unstructured.Unstructured, d *engine.Decision, res engine.Result) {
	name := d.Asset.Name
	target := d.Target()
	objKey := ""
	if target != nil {
		objKey = engine.ObjectKey(target)
	}
	st := AssetStatus{Asset: name, Outcome: res.Outcome, Reason: res.Reason, Object: objKey,
		Drift: res.Drift, Opponents: res.Opponents, Changed: time.Now(), Desired: d.Desired}
	if d.Live != nil {
		st.ObservedResourceVersion = d.Live.GetResourceVersion()
	}

	r.status.mu.Lock()
	prev, had := r.status.assets[name]
	if had && prev.Outcome == st.Outcome && prev.Reason == st.Reason {
		st.Changed = prev.Changed
	}
	r.status.assets[name] = st
	r.status.mu.Unlock()

	r.metricsFor(d, res, target)
	changed := !had || prev.Outcome != st.Outcome || prev.Reason != st.Reason
	r.logAction(ctx, d, res, target, changed)
	if had && prev.Outcome == engine.MissingDependency && res.Outcome != engine.MissingDependency {
		log.FromContext(ctx).Info("dependency installed: the asset is evaluated again", "asset", name, "object", objKey, "action", "dependency-back", "outcome", string(res.Outcome))
	}

	subject := target
	switch res.Outcome {
	case engine.Applied:
		reason := "Created"
		if d.Live != nil {
			reason = "DriftCorrected"
		}
		r.event(hco, subject, corev1.EventTypeNormal, reason, res.Reason)
		if d.Live == nil || touchesSpec(res.Drift) {
			// Labels and annotations do not reach a node; spec does.
			r.rollout(hco, subject, engine.DisruptionOf(d), res.Reason)
		}
	case engine.Deleted:
		r.event(hco, subject, corev1.EventTypeNormal, "Deleted", res.Reason)
		r.rollout(hco, subject, engine.DisruptionOf(d), res.Reason)
	case engine.Retained:
		r.eventOnce(hco, subject, corev1.EventTypeWarning, "Retained", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Throttled:
		// One event per episode: the message names fields and managers,
		// not the remaining wait, so it stays the same while the fight lasts.
		r.eventOnce(hco, subject, corev1.EventTypeWarning, "Thrashing", res.Reason)
	case engine.Invalid:
		r.eventOnce(hco, subject, corev1.EventTypeWarning, invalidEvent(d.Annotation),
			fmt.Sprintf("asset %s: %s is left as it is: %s", name, objKey, res.Reason))
	case engine.MissingDependency:
		r.eventOnce(hco, subject, corev1.EventTypeWarning, "MissingDependency", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Conflict:
		r.eventOnce(hco, subject, corev1.EventTypeWarning, "Conflict", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Settling:
		r.eventOnce(hco, subject, corev1.EventTypeNormal, "Settling", fmt.Sprintf("asset %s: %s", name, res.Reason))
	case engine.Failed:
		r.eventOnce(hco, subject, corev1.EventTypeWarning, "SyncFailed", fmt.Sprintf("asset %s: %s", name, res.Reason))
	default:
		// Quiet outcomes: forget the dedup state so a recurrence is reported
		// again (except a warning that still stands).
		r.forgetEvents(subject, unresolvedReason)
	}
	if len(d.Unresolved) > 0 {
		r.eventOnce(hco, subject, corev1.EventTypeWarning, unresolvedReason,
			fmt.Sprintf("annotation %s on %s: pointer(s) %s address nothing on the object and are ignored; the rest of the annotation applies",
				annotations.IgnoreFields, objKey, strings.Join(d.Unresolved, ", ")))
	} else {
		r.forgetEvent(subject, unresolvedReason)
	}
}

const unresolvedReason = "IgnoreFieldsUnresolved"

// invalidEvent is the Event reason of an asset left as it is because of
// the annotation named.
func invalidEvent(annotation string) string {
	switch annotation {
	case annotations.Patch:
		return "InvalidPatch"
	case annotations.IgnoreFields:
		return "InvalidIgnoreFields"
	case annotations.Mode:
		return "InvalidMode"
	case annotations.DisabledResources:
		// An entry not understood holds the asset (engine.Plan).
		return "InvalidDisabledResources"
	}
	return "InvalidSwitch"
}

func (r *Reconciler) metricsFor(d *engine.Decision, res engine.Result, target *unstructured.Unstructured) {
	name := d.Asset.Name
	for _, o := range engine.Outcomes {
		v := 0.0
		if o == res.Outcome {
			v = 1
		}
		metrics.AssetOutcome.WithLabelValues(name, string(o)).Set(v)
	}
	if res.Outcome == engine.Applied {
		metrics.CorrectiveWrites.WithLabelValues(target.GetKind(), target.GetNamespace(), target.GetName()).Inc()
	}
	if len(res.Drift) > 0 && d.Live != nil {
		confirmed := "true"
		if res.Outcome == engine.Unchanged {
			confirmed = "false"
		}
		metrics.DriftDetected.WithLabelValues(target.GetKind(), target.GetNamespace(), target.GetName(), confirmed).Inc()
	}

	// Per-object series carry labels that change; drop the asset's old ones.
	r.status.mu.Lock()
	old := r.status.series[name]
	delete(r.status.series, name)
	r.status.mu.Unlock()
	for _, s := range old {
		s.vec.DeleteLabelValues(s.labels...)
	}
	var fresh []series
	switch {
	case res.Outcome == engine.Invalid && target != nil:
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{target.GetKind(), target.GetNamespace(), target.GetName(), d.Annotation, string(d.InvalidReason)}})
	case res.Outcome == engine.Throttled && target != nil:
		fresh = append(fresh, series{metrics.Throttled, []string{target.GetKind(), target.GetNamespace(), target.GetName(), strings.Join(res.Opponents, ",")}})
	case res.Outcome == engine.MissingDependency && d.Rendered != nil:
		fresh = append(fresh, series{metrics.MissingDependency, []string{name, d.Rendered.GetKind()}})
	}
	if len(d.Unresolved) > 0 && target != nil {
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{target.GetKind(), target.GetNamespace(), target.GetName(), annotations.IgnoreFields, string(engine.UnresolvedPointer)}})
	}
	if target != nil {
		for _, c := range d.Customizations {
			fresh = append(fresh, series{metrics.Customization, []string{name, target.GetKind(), target.GetNamespace(), target.GetName(), c}})
		}
	}
	for _, s := range fresh {
		s.vec.WithLabelValues(s.labels...).Set(1)
	}
	r.status.mu.Lock()
	r.status.series[name] = fresh
	r.status.mu.Unlock()
}

// logAction writes one line per action, none for a no-op or a standing
// state: a constant message per action, the object as "object" (one
// string) and "objectRef" (kind, namespace, name: the reconcile's own
// "namespace" and "name" keys are the HCO's), the reason and fields as
// values, so an admin can aggregate by any of them.
func (r *Reconciler) logAction(ctx context.Context, d *engine.Decision, res engine.Result, target *unstructured.Unstructured, changed bool) {
	kv := []any{"asset", d.Asset.Name, "reason", res.Reason}
	if target != nil {
		kv = append(kv, "object", engine.ObjectKey(target), "objectRef", objectRef(target))
	}
	logger := log.FromContext(ctx).WithValues(kv...)
	retry := func() string { return res.RetryAfter.Round(time.Second).String() }
	switch res.Outcome {
	case engine.Applied:
		if d.Live == nil {
			logger.Info("object created", "action", "create", "fields", res.Drift)
		} else {
			logger.Info("drift corrected", "action", "correct", "fields", res.Drift)
		}
	case engine.Deleted:
		logger.Info("object deleted", "action", "delete")
	case engine.Throttled:
		if changed {
			logger.Info("writes paused: another actor keeps changing the object", "action", "throttle", "fields", res.Drift, "opponents", res.Opponents, "retryAfter", retry())
		}
	case engine.Invalid:
		if changed {
			logger.Info("annotation not understood: the object is left as it is", "action", "invalid", "annotation", d.Annotation, "invalidReason", string(d.InvalidReason))
		}
	case engine.Retained:
		if changed {
			logger.Info("object kept, not deleted", "action", "retain")
		}
	case engine.Failed:
		if changed {
			logger.Error(res.Err, "asset failed; retrying", "action", "fail", "retryAfter", retry())
		}
	case engine.MissingDependency:
		if changed {
			logger.Info("asset waits for a dependency", "action", "wait")
		}
	case engine.Conflict:
		if changed {
			logger.Info("object not applied: another object holds its scope", "action", "conflict")
		}
	case engine.Settling:
		if changed {
			logger.Info("write held until the facts it follows settle", "action", "settle", "retryAfter", retry())
		}
	}
}

// objectRef is an object's identity as structured log values.
func objectRef(u *unstructured.Unstructured) map[string]string {
	return map[string]string{"kind": u.GetKind(), "namespace": u.GetNamespace(), "name": u.GetName()}
}

// series is one per-object gauge series an asset set.
type series struct {
	vec    *prometheus.GaugeVec
	labels []string
}

// recordNotices reports what on the HCO the autopilot does not act on as
// written: one metric series per (annotation, reason) and one Event per
// Event reason and episode, in the HCO-input key space (an outcome
// recorded on the HCO object itself, the golden config's, never clears it).
func (r *Reconciler) recordNotices(ctx context.Context, hco *unstructured.Unstructured, notices []engine.Notice) {
	byEvent := map[string][]string{}
	var fresh []series
	for _, n := range notices {
		byEvent[n.Event] = append(byEvent[n.Event], n.Message)
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{hco.GetKind(), hco.GetNamespace(), hco.GetName(), n.Annotation, string(n.Reason)}})
	}
	r.status.mu.Lock()
	old := r.status.series[hcoInputSeries]
	r.status.series[hcoInputSeries] = fresh
	r.status.mu.Unlock()
	for _, s := range old {
		s.vec.DeleteLabelValues(s.labels...)
	}
	for _, s := range fresh {
		s.vec.WithLabelValues(s.labels...).Set(1)
	}
	for _, reason := range noticeEvents {
		msgs := byEvent[reason]
		if len(msgs) == 0 {
			r.forgetInputEvent(hco, reason)
			continue
		}
		msg := strings.Join(msgs, "; ")
		if r.inputEventOnce(hco, reason, msg) {
			log.FromContext(ctx).Info("HCO input not understood", "action", "invalid", "object", engine.ObjectKey(hco), "reason", reason, "detail", msg)
		}
	}
}

// noticeEvents are the Event reasons of engine.Evaluator.Notices.
var noticeEvents = []string{"InvalidDisabledResources", "InvalidAutopilot", "InvalidSwitch", "UnknownAnnotation", "FeatureGatesUnreadable"}

// hcoInputSeries keys the HCO-input metric series (no asset has this name).
const hcoInputSeries = "\x00hco-inputs"

// rollout names, on the HCO, a write that makes the Machine Config Operator
// drain and reboot a pool's nodes: the one event an admin must not miss.
func (r *Reconciler) rollout(hco, subject *unstructured.Unstructured, d engine.Disruption, what string) {
	if !d.Reboot || subject == nil {
		return
	}
	pool := d.Pool
	if pool == "" {
		pool = "(unnamed)"
	}
	r.event(hco, subject, corev1.EventTypeWarning, "PoolRollout",
		fmt.Sprintf("MachineConfigPool %s rolls: the Machine Config Operator drains and reboots its nodes one at a time (%s)", pool, what))
}

// recordActivation reports the HCO's platform.kubevirt.io/autopilot switch:
// paused is idle (log, metric, /debug/health) with one Event. (Entries
// naming nothing are a notice: recordNotices.)
func (r *Reconciler) recordActivation(ctx context.Context, hco *unstructured.Unstructured, act engine.Activation) {
	if !act.Paused {
		r.setIdle(ctx, IdleStatus{})
		r.forgetInputEvent(hco, "Paused")
		return
	}
	msg := fmt.Sprintf("paused by HCO annotation %s=%q: nothing is written or deleted until it is removed, \"true\", or lists assets", annotations.Autopilot, act.Value)
	r.setIdle(ctx, IdleStatus{Reason: IdlePaused, Message: msg})
	r.inputEventOnce(hco, "Paused", msg)
}

func (r *Reconciler) recordTombstones(hco *unstructured.Unstructured, results []tombstone.Result) {
	r.status.mu.Lock()
	r.status.tombstones = results
	r.status.mu.Unlock()
	for _, t := range results {
		o := t.Tombstone.Object
		for _, s := range []tombstone.Status{tombstone.Gone, tombstone.Skipped, tombstone.Error} {
			v := 0.0
			if s == t.Status {
				v = 1
			}
			metrics.Tombstone.WithLabelValues(o.GetKind(), o.GetNamespace(), o.GetName(), string(s)).Set(v)
		}
		switch {
		case t.Deleted:
			r.event(hco, o, corev1.EventTypeNormal, "TombstoneDeleted", fmt.Sprintf("deleted obsolete object (%s)", t.Tombstone.Path))
			r.rollout(hco, o, engine.ObjectDisruption(t.Live), "obsolete object deleted")
		case t.Status == tombstone.Skipped:
			r.eventOnce(hco, o, corev1.EventTypeNormal, "TombstoneSkipped", "left obsolete object in place: "+t.Reason)
		case t.Status == tombstone.Error:
			r.eventOnce(hco, o, corev1.EventTypeWarning, "TombstoneFailed", "could not delete obsolete object (retrying): "+t.Reason)
		}
	}
}

// event records on the object concerned (related to the HCO) and on the HCO.
func (r *Reconciler) event(hco, subject *unstructured.Unstructured, typ, reason, msg string) {
	if len(msg) > 1000 {
		msg = msg[:1000] + "..."
	}
	// related stays an untyped nil unless set: a typed nil pointer in the
	// interface would make the recorder dereference it.
	var related runtime.Object
	if subject != nil && (subject.GetUID() == "" || subject.GetUID() != hco.GetUID()) {
		// Objects not created yet (or gone) have no UID to attach an event to.
		if subject.GetUID() != "" {
			r.recorder.Eventf(subject, hco, typ, reason, "Reconcile", "%s", msg)
		}
		// The events API groups events into a series by (regarding, related,
		// reason, action), not by message: the subject in related keeps
		// three creations three events instead of one with a count.
		related = subject
		msg = engine.ObjectKey(subject) + ": " + msg
	}
	r.recorder.Eventf(hco, related, typ, reason, "Reconcile", "%s", msg)
}

// eventOnce records an event unless the same one was the last recorded for
// that subject and reason.
func (r *Reconciler) eventOnce(hco, subject *unstructured.Unstructured, typ, reason, msg string) {
	k := dedupKey(hco, subject, reason)
	r.status.mu.Lock()
	same := r.status.lastEvent[k] == msg
	r.status.lastEvent[k] = msg
	r.status.mu.Unlock()
	if !same {
		r.event(hco, subject, typ, reason, msg)
	}
}

// inputEventOnce records a warning about the HCO's inputs (its
// annotations, the activation switch) once per episode. Its dedup state
// has its own key space: outcomes recorded on the HCO object as the golden
// config's target never clear it.
func (r *Reconciler) inputEventOnce(hco *unstructured.Unstructured, reason, msg string) bool {
	k := inputKey(hco, reason)
	r.status.mu.Lock()
	same := r.status.lastEvent[k] == msg
	r.status.lastEvent[k] = msg
	r.status.mu.Unlock()
	if !same {
		r.event(hco, nil, corev1.EventTypeWarning, reason, msg)
	}
	return !same
}

// forgetInputEvent ends an HCO-input warning's episode.
func (r *Reconciler) forgetInputEvent(hco *unstructured.Unstructured, reason string) {
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	delete(r.status.lastEvent, inputKey(hco, reason))
}

func inputKey(hco *unstructured.Unstructured, reason string) string {
	return "input\x00" + engine.ObjectKey(hco) + "|" + reason
}

// forgetEvent drops the dedup state of one (subject, reason).
func (r *Reconciler) forgetEvent(subject *unstructured.Unstructured, reason string) {
	if subject == nil {
		return
	}
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	delete(r.status.lastEvent, dedupKey(subject, nil, reason))
}

// forgetEvents drops the dedup state of every reason of subject but keep.
func (r *Reconciler) forgetEvents(subject *unstructured.Unstructured, keep string) {
	if subject == nil {
		return
	}
	prefix := engine.ObjectKey(subject) + "|"
	r.status.mu.Lock()
	defer r.status.mu.Unlock()
	for k := range r.status.lastEvent {
		if strings.HasPrefix(k, prefix) && k != prefix+keep {
			delete(r.status.lastEvent, k)
		}
	}
}

func dedupKey(hco, subject *unstructured.Unstructured, reason string) string {
	s := hco
	if subject != nil {
		s = subject
	}
	return engine.ObjectKey(s) + "|" + reason
}

func touchesSpec(drift []string) bool {
	for _, p := range drift {
		if p == "/spec" || strings.HasPrefix(p, "/spec/") {
			return true
		}
	}
	return false
}
