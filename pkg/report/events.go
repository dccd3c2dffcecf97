package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

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
		// An entry not understood holds the asset (engine.Walk).
		return "InvalidDisabledResources"
	}
	return "InvalidSwitch"
}

// maxRolled bounds the rollouts remembered (Snapshot.Rolled).
const maxRolled = 50

// Rollout is a write or deletion the autopilot sent that rolled pools.
type Rollout struct {
	Object     string            `json:"object"`
	Disruption engine.Disruption `json:"disruption"`
	What       string            `json:"what"`
	Impact     string            `json:"impact,omitempty"`
	At         time.Time         `json:"at"`
}

// rollout names, on the HCO, a write that makes the Machine Config Operator
// roll a pool: drain and reboot its nodes (the one event an admin must not
// miss), or, where the cluster's node disruption policy covers the change,
// take lighter actions on each node without a drain.
func (r *Reporter) rollout(hco, subject *unstructured.Unstructured, d engine.Disruption, what, impact string) {
	if subject == nil || (!d.Reboot && len(d.Actions) == 0) {
		return
	}
	r.mu.Lock()
	r.rolled = append(r.rolled, Rollout{Object: engine.ObjectKey(subject), Disruption: d, What: what, Impact: impact, At: time.Now()})
	if len(r.rolled) > maxRolled {
		r.rolled = slices.Delete(r.rolled, 0, len(r.rolled)-maxRolled)
	}
	r.mu.Unlock()
	pool := strings.Join(d.Rolled(), ", ")
	if pool == "" {
		pool = "(unnamed)"
	}
	if !d.Reboot {
		r.event(hco, subject, corev1.EventTypeNormal, "PoolRollout", fmt.Sprintf(
			"MachineConfigPool %s rolls without a reboot: by the node disruption policy the Machine Config Operator takes these actions on each node, with no drain: %s (%s)",
			pool, strings.Join(d.Actions, ", "), what))
		return
	}
	msg := fmt.Sprintf("MachineConfigPool %s rolls: the Machine Config Operator drains and reboots its nodes in turn, as many at once as its maxUnavailable allows (%s)", pool, what)
	if impact != "" {
		msg += "; " + impact
	}
	r.event(hco, subject, corev1.EventTypeWarning, "PoolRollout", msg)
}

// event records on the object concerned (related to the HCO) and on the HCO.
func (r *Reporter) event(hco, subject *unstructured.Unstructured, typ, reason, msg string) {
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
// that owner (eventOwner) and reason.
func (r *Reporter) eventOnce(owner string, hco, subject *unstructured.Unstructured, typ, reason, msg string) {
	k := owner + "|" + reason
	r.mu.Lock()
	same := r.lastEvent[k] == msg
	r.lastEvent[k] = msg
	r.mu.Unlock()
	if !same {
		r.event(hco, subject, typ, reason, msg)
	}
}

// eventOwner names whose episode an asset's Event belongs to: the asset's,
// whatever object it names this time. Not the object's: an asset that
// fails before it renders has none, and a quiet outcome with its object
// would not end that episode, so the failure coming back would never be
// told again. Not the HCO's for an asset without an object: the golden
// config's quiet outcome on the HCO would end it every reconcile, and the
// warning would repeat on each (and two such assets would take turns).
func eventOwner(asset string) string {
	return "asset " + asset
}

// forgetEvent drops the dedup state of one (owner, reason).
func (r *Reporter) forgetEvent(owner, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lastEvent, owner+"|"+reason)
}

// forgetEvents drops the dedup state of every reason of owner but keep.
func (r *Reporter) forgetEvents(owner string, keep ...string) {
	prefix := owner + "|"
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.lastEvent {
		if strings.HasPrefix(k, prefix) && !slices.Contains(keep, strings.TrimPrefix(k, prefix)) {
			delete(r.lastEvent, k)
		}
	}
}
