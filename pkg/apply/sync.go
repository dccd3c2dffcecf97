// Package apply writes the engine's decisions to the cluster: server-side
// apply behind the drift verdict and the anti-thrashing gate (Syncer), and
// the one guarded deletion (Delete).
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// Syncer brings live objects to their desired state with server-side apply.
//
// Steady state costs no API request: the local drift verdict compares against
// the cached live object. A suspected drift is confirmed by a server-side
// dry-run (defaults, webhooks and other managers are the server's to judge);
// a dry-run that changes nothing is remembered for that live
// resourceVersion and desired state, so it is never repeated.
type Syncer struct {
	Client   client.Client
	Throttle *throttle.Throttle

	mu       sync.Mutex
	verified map[string]string // object key -> uid/resourceVersion/desired hash proven in sync
	created  map[string]bool   // objects this process created or saw live
}

// Hold is asked just before a write is sent (a creation or a correction
// that is due, before it takes a token): a result it returns with true is
// the outcome instead, and nothing is written (a disruption window that is
// closed, a pool that is rolling).
type Hold func(d *engine.Decision, res engine.Result) (engine.Result, bool)

// NamespaceRetry is how soon an object whose namespace is missing is tried again.
var NamespaceRetry = time.Minute

// Sync applies d.Desired when it differs from d.Live. d must be engine.VerdictIncluded.
//
// Creating an object is not a correction and takes no write token;
// re-creating one this process created or saw (someone keeps deleting it)
// is, and does. A
// correction costs one request when the local verdict is certain (every
// drifted field is now owned by another manager: someone changed what the
// autopilot had set), else a dry-run first. While the object's bucket is
// empty nothing is sent at all, not even a dry-run.
func (s *Syncer) Sync(ctx context.Context, d *engine.Decision, hold Hold) engine.Result {
	if d.Verdict != engine.VerdictIncluded || d.Desired == nil {
		return engine.Reported(d)
	}
	key := engine.ObjectKey(d.Desired)
	if d.Live == nil {
		res := engine.Result{Drift: []string{"(object absent)"}}
		if held, ok := asked(hold, d, res); ok {
			return held
		}
		if s.wasCreated(key) {
			// Someone keeps deleting what this process created (a prune,
			// another controller): each re-creation of a MachineConfig is
			// a reboot, so it is a correction and takes a token.
			if ok, wait := s.Throttle.Allow(key); !ok {
				return throttled(res, key, wait)
			}
		}
		res = s.apply(ctx, d, res)
		if res.Outcome == engine.Applied {
			s.markCreated(key)
		}
		return res
	}
	s.markCreated(key) // it exists: should it vanish, re-creating it is a correction
	diff := notDeferred(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure), d.Deferred)
	if len(diff) == 0 {
		return engine.Result{Outcome: engine.Unchanged}
	}
	stamp := s.stamp(d)
	if s.isVerified(key, stamp) {
		return engine.Result{Outcome: engine.Unchanged}
	}
	res := engine.Result{Drift: diff}
	var certain bool
	res.Opponents, certain = opponents(d.Live, diff)
	if wait := s.Throttle.Wait(key); wait > 0 && !d.ReportOnly {
		// Report-only writes nothing, so it has no budget to wait for.
		return throttled(res, key, wait)
	}
	if !certain && !s.isVerified(key, "drifted "+stamp) {
		changes, err := s.dryRun(ctx, d)
		if err != nil {
			return engine.Result{Outcome: engine.Failed, Reason: fmt.Sprintf("server-side dry-run: %v", err), Err: err}
		}
		if !changes {
			s.setVerified(key, stamp)
			return engine.Result{Outcome: engine.Unchanged, Drift: diff}
		}
		// Confirmed: a write that is held (report-only, a window) is not
		// dry-run again until the object or the desired state changes.
		s.setVerified(key, "drifted "+stamp)
	}
	if held, ok := asked(hold, d, res); ok {
		return held
	}
	if ok, wait := s.Throttle.Allow(key); !ok {
		return throttled(res, key, wait)
	}
	return s.apply(ctx, d, res)
}

func asked(hold Hold, d *engine.Decision, res engine.Result) (engine.Result, bool) {
	if hold == nil {
		return engine.Result{}, false
	}
	return hold(d, res)
}

func throttled(res engine.Result, key string, wait time.Duration) engine.Result {
	res.Outcome, res.RetryAfter = engine.Throttled, wait
	// No remaining time in the message: it stays the same for the whole
	// episode, so the Thrashing event is recorded once.
	res.Reason = fmt.Sprintf("corrective writes to %s are paused: %s keep changing; writing resumes by itself when the write budget refills", key, fieldsAndManagers(res.Drift, res.Opponents))
	return res
}

func (s *Syncer) apply(ctx context.Context, d *engine.Decision, res engine.Result) engine.Result {
	obj := d.Desired.DeepCopy()
	if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(annotations.FieldManager), client.ForceOwnership); err != nil {
		if ns := obj.GetNamespace(); d.Live == nil && ns != "" && apierrors.IsNotFound(err) {
			// The operator that owns the kind creates its namespace; until
			// it does, this is a missing dependency, not a failure.
			res.Outcome, res.RetryAfter = engine.MissingDependency, NamespaceRetry
			res.Reason = fmt.Sprintf("namespace %s does not exist (is its operator installed?)", ns)
			return res
		}
		res.Outcome, res.Reason, res.Err = engine.Failed, fmt.Sprintf("server-side apply: %v", err), err
		return res
	}
	res.Outcome, res.Object = engine.Applied, obj
	if d.Live != nil && obj.GetResourceVersion() == d.Live.GetResourceVersion() {
		// The server changed nothing: a verdict we believed certain was
		// not. Remember it like a dry-run's, so it is never repeated.
		s.setVerified(engine.ObjectKey(d.Desired), s.stamp(d))
		return engine.Result{Outcome: engine.Unchanged, Drift: res.Drift}
	}
	if d.Live == nil {
		res.Reason = "created"
	} else {
		res.Reason = "corrected " + strings.Join(res.Drift, ", ")
	}
	return res
}

// Forget drops what the Syncer remembers of an object the autopilot
// removed itself (an asset turned off): creating it again later is not a
// correction.
func (s *Syncer) Forget(key string) {
	s.Throttle.Forget(key)
	s.mu.Lock()
	delete(s.verified, key)
	delete(s.created, key)
	s.mu.Unlock()
}

func (s *Syncer) wasCreated(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[key]
}

func (s *Syncer) markCreated(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created == nil {
		s.created = map[string]bool{}
	}
	s.created[key] = true
}

// dryRun reports whether applying desired would change the live object.
func (s *Syncer) dryRun(ctx context.Context, d *engine.Decision) (bool, error) {
	obj := d.Desired.DeepCopy()
	if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(annotations.FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return false, err
	}
	return !equality.Semantic.DeepEqual(comparable(obj), comparable(d.Live)), nil
}

// comparable drops what every write changes, leaving the content.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c.Object
}

func (s *Syncer) stamp(d *engine.Decision) string {
	js, _ := d.Desired.MarshalJSON()
	sum := sha256.Sum256(js)
	return string(d.Live.GetUID()) + "/" + d.Live.GetResourceVersion() + "/" + hex.EncodeToString(sum[:8])
}

func (s *Syncer) isVerified(key, stamp string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verified[key] == stamp
}

func (s *Syncer) setVerified(key, stamp string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verified == nil {
		s.verified = map[string]string{}
	}
	s.verified[key] = stamp
}

// opponents names the other managers owning the drifted fields: who the
// autopilot is fighting with. certain is true when every drifted field has
// such an owner: another manager changed it, so applying will change it
// back and no dry-run is needed to know.
func opponents(live *unstructured.Unstructured, diff []string) (out []string, certain bool) {
	seen := map[string]bool{}
	certain = true
	for _, path := range diff {
		p, err := jsonpointer.Parse(path)
		if err != nil {
			certain = false
			continue
		}
		owners := managedfields.Owners(live, p, annotations.FieldManager)
		if len(managedfields.WholeOwners(live, p, annotations.FieldManager)) == 0 {
			// Nobody else holds the whole field (a default, an element
			// added beside ours): let the server judge.
			certain = false
		}
		for _, m := range owners {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out, certain
}

func fieldsAndManagers(diff, managers []string) string {
	who := "another actor"
	if len(managers) > 0 {
		who = "field manager(s) " + strings.Join(managers, ", ")
	}
	return fmt.Sprintf("fields %s, changed by %s", strings.Join(diff, ", "), who)
}

// Delete deletes live if g allows it, with UID and resourceVersion
// preconditions so a replaced or changed object survives. It returns
// deleted=false with a reason when it refused; NotFound is success. Every
// deletion path (switch off, tombstone) goes through it.
func Delete(ctx context.Context, c client.Writer, g engine.Guard, live *unstructured.Unstructured) (bool, string, error) {
	if ok, why := g.MayDelete(live); !ok {
		return false, why, nil
	}
	uid, rv := live.GetUID(), live.GetResourceVersion()
	err := c.Delete(ctx, live, client.Preconditions{UID: &uid, ResourceVersion: &rv},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return false, "", err
	}
	return true, "", nil
}

// notDeferred drops from diff the fields left to their declared owners: a
// share of one the autopilot still holds (which applying would release) is
// not drift.
func notDeferred(diff []string, deferred []engine.Deferral) []string {
	if len(deferred) == 0 {
		return diff
	}
	out := diff[:0:0]
	for _, p := range diff {
		if !slices.ContainsFunc(deferred, func(d engine.Deferral) bool { return p == d.Field || strings.HasPrefix(p, d.Field+"/") }) {
			out = append(out, p)
		}
	}
	return out
}
