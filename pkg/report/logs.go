package report

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// logAction writes one line per action, none for a no-op or a standing
// state: a constant message per action, the object as "object" (one
// string) and "objectRef" (kind, namespace, name: the reconcile's own
// "namespace" and "name" keys are the HCO's), the reason and fields as
// values, so an admin can aggregate by any of them.
func (r *Reporter) logAction(ctx context.Context, d *engine.Decision, res engine.Result, target *unstructured.Unstructured, changed bool) {
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
