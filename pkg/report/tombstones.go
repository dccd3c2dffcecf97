package report

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Tombstones records the last reap of obsolete objects: a gauge per
// tombstone and status, an Event for each deletion (and the pool rollout
// it causes), one per episode for a skip or a failure.
func (r *Reporter) Tombstones(ctx context.Context, hco *unstructured.Unstructured, results []tombstone.Result) {
	r.mu.Lock()
	r.tombstones = results
	r.mu.Unlock()
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
			log.FromContext(ctx).Info("obsolete object deleted", "action", "delete", "object", engine.ObjectKey(o), "objectRef", objectRef(o),
				"tombstone", t.Tombstone.Path, "disruption", t.Disruption.String(), "impact", t.Impact)
			r.event(hco, o, corev1.EventTypeNormal, "TombstoneDeleted", fmt.Sprintf("deleted obsolete object (%s)", t.Tombstone.Path))
			r.rollout(hco, o, t.Disruption, "obsolete object deleted", t.Impact)
		case t.Status == tombstone.Skipped:
			r.eventOnce(engine.Identity(o), hco, o, corev1.EventTypeNormal, "TombstoneSkipped", "left obsolete object in place: "+t.Reason)
		case t.Status == tombstone.Error:
			r.eventOnce(engine.Identity(o), hco, o, corev1.EventTypeWarning, "TombstoneFailed", "could not delete obsolete object (retrying): "+t.Reason)
		}
	}
}
