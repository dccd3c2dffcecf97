package report

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// logAction writes one line per action, none for a no-op or a standing
// state (those only at debug verbosity): a constant message per action, the object as "object" (one
// string) and "objectRef" (kind, namespace, name: the reconcile's own
// "namespace" and "name" keys are the HCO's), the reason and fields as
// values, so an admin can aggregate by any of them.
func (r *Reporter) logAction(ctx context.Context, d *engine.Decision, res engine.Result, target *unstructured.Unstructured, changed bool) {
	kv := []any{"asset", d.Asset.Name, "reason", res.Reason}
	if res.Impact != "" {
		kv = append(kv, "impact", res.Impact)
	}
	if target != nil {
		kv = append(kv, "object", engine.ObjectKey(target), "objectRef", objectRef(target))
	}
	logger := log.FromContext(ctx).WithValues(kv...)
	retry := func() string { return res.RetryAfter.Round(time.Second).String() }
	logged := false
	act := func(msg string, kv ...any) {
		logged = true
		logger.Info(msg, kv...)
	}
	switch res.Outcome {
	case engine.Applied:
		switch {
		case d.Live == nil:
			act("object created", "action", "create", "fields", res.Drift)
		case res.Updated:
			act("object updated", "action", "update", "fields", res.Drift)
		default:
			act("drift corrected", "action", "correct", "fields", res.Drift)
		}
	case engine.Deleted:
		act("object deleted", "action", "delete")
	case engine.Throttled:
		if changed {
			act("writes paused: another actor keeps changing the object", "action", "throttle", "fields", res.Drift, "opponents", res.Opponents, "retryAfter", retry())
		}
	case engine.Invalid:
		if changed {
			act("annotation not understood: the object is left as it is", "action", "invalid", "annotation", engine.InvalidAnnotation(d, res), "invalidReason", string(engine.InvalidReasonOf(d, res)))
		}
	case engine.Retained:
		if changed {
			act("object kept, not deleted", "action", "retain")
		}
	case engine.Failed:
		if changed {
			logged = true
			logger.Error(res.Err, "asset failed; retrying", "action", "fail", "retryAfter", retry())
		}
	case engine.Refused:
		if changed {
			act("write refused by the API server; retrying on a backoff", "action", "refused", "retryAfter", retry())
		}
	case engine.MissingDependency:
		if changed {
			act("asset waits for a dependency", "action", "wait")
		}
	case engine.NodePool:
		if changed {
			act("node configuration goes to a NodePool on the management cluster", "action", "nodepool")
		}
	case engine.Conflict:
		if changed {
			act("object not applied: another object holds its scope", "action", "conflict")
		}
	case engine.Staged:
		if changed {
			act("write staged until the disruption window opens or its budget allows", "action", "stage", "retryAfter", retry())
		}
	case engine.Settling:
		if changed {
			act("write held until its facts settle or its pool is at rest", "action", "settle", "retryAfter", retry())
		}
	}
	if !logged {
		// No action: nothing at the default level; the reasoning at debug
		// verbosity (--zap-log-level=debug).
		logger.V(1).Info("asset evaluated", "outcome", string(res.Outcome), "verdict", string(d.Verdict))
	}
}

// objectRef is an object's identity as structured log values.
func objectRef(u *unstructured.Unstructured) map[string]string {
	return map[string]string{"kind": u.GetKind(), "namespace": u.GetNamespace(), "name": u.GetName()}
}
