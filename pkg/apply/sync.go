// Package apply writes the engine's decisions to the cluster: server-side
// apply behind the drift verdict and the anti-thrashing gate (Syncer), and
// the one guarded deletion (Delete).
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Syncer brings live objects to their desired state with server-side apply.
//
// Steady state costs no API request: the local drift verdict compares against
// the cached live object. A suspected drift is confirmed by a server-side
// dry-run (defaults, webhooks and other managers are the server's to judge);
// a dry-run that changes nothing is remembered for that live
// resourceVersion and desired state, so it is never repeated. Whether a
// write may go is the gate's to say (pkg/gate), asked just before it is
// sent.
type Syncer struct {
	Client client.Client
	Gate   *gate.Gate

	// Now is the clock of the cache's lag (nil: time.Now).
	Now func() time.Time

	mu       sync.Mutex
	verified map[string]string // object identity -> uid/resourceVersion/desired hash proven in sync
	created  map[string]bool   // objects this process created or saw live
	// wrote is each object's last write while the cache may not show it
	// yet: safe to lose (a restart at worst sends the same write once,
	// which the server answers without a change).
	wrote map[string]written
}

// written is one write: the resourceVersion the cache showed before it
// ("" absent), the server's after it, and when.
type written struct {
	before, after string
	at            time.Time
	obj           *unstructured.Unstructured // the server's answer
}

// CacheLag bounds how long the cache may still show an object as it was
// before the autopilot's own write: within it that write is trusted (no
// second write, no second report of it), after it the cache is.
const CacheLag = 10 * time.Second

// NamespaceRetry is how soon an object whose namespace is missing is tried again.
var NamespaceRetry = time.Minute

// Sync applies d.Desired when it differs from d.Live, if the gate lets
// the write go now; rc is the reconcile's facts the gate judges on. d must
// be engine.VerdictIncluded.
//
// Creating an object is not a correction and takes no write token;
// re-creating one this process created or saw (someone keeps deleting it)
// is, and does. A correction costs one request when the local verdict is
// certain (every drifted field is now owned by another manager: someone
// changed what the autopilot had set), else a dry-run first. While the
// object's budget is spent (and no earlier check holds it) nothing is
// sent at all, not even a dry-run.
func (s *Syncer) Sync(ctx context.Context, rc *rendercontext.RenderContext, d *engine.Decision) engine.Result {
	return s.SyncOn(ctx, rc, d, nil)
}

// Fresh returns the render context with the HCO as the API server has it
// now (read at most once per reconcile).
type Fresh func(context.Context) (*rendercontext.RenderContext, error)

// SyncOn is Sync for a write that goes with a deletion (the object it
// replaces, a tombstone whose settings it carries): like every deletion,
// it is judged on the HCO as the API server has it now (fresh), read only
// once the cached rc's verdict would let the write go, so a held or
// converged pair costs no request.
func (s *Syncer) SyncOn(ctx context.Context, rc *rendercontext.RenderContext, d *engine.Decision, fresh Fresh) engine.Result {
	if d.Verdict != engine.VerdictIncluded || d.Desired == nil {
		return engine.Reported(d)
	}
	id := engine.Identity(d.Desired)
	if left, obj, lagging := s.lagging(id, d.Live); lagging {
		// Its own write, not in the cache yet: judged again once it is
		// (the write's watch event, or this retry). The server's copy it
		// answered stands for the object (the HCO in effect, for the
		// assets rendered from it).
		return engine.Result{Outcome: engine.Unchanged, RetryAfter: left, Object: obj}
	}
	if d.Live == nil {
		res := engine.Result{Drift: []string{"(object absent)"}}
		op := gate.Create
		if s.wasCreated(id) {
			// Someone keeps deleting what this process created (a prune,
			// another controller): each re-creation of a MachineConfig is
			// a reboot, so it is a correction and takes a token.
			op = gate.Recreate
		}
		w := gate.ForDecision(d, op, res.Drift, nil)
		res.Disruption = &w.Disruption
		v, err := s.judge(ctx, rc, w, fresh)
		if err != nil {
			res.Outcome, res.Reason, res.Err = engine.Failed, err.Error(), err
			return res
		}
		if !v.Go {
			return held(res, v)
		}
		res = s.apply(ctx, d, res, w, v)
		if res.Outcome == engine.Applied {
			s.markCreated(id)
		}
		return res
	}
	s.markCreated(id) // it exists: should it vanish, re-creating it is a correction
	diff := withoutOldStamp(withoutRecord(engine.WithoutDeferred(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure), d.Deferred), d), d)
	if len(diff) == 0 {
		return engine.Result{Outcome: engine.Unchanged}
	}
	stamp := s.stamp(d)
	if s.isVerified(id, stamp) {
		return engine.Result{Outcome: engine.Unchanged}
	}
	res := engine.Result{Drift: diff}
	var certain bool
	res.Opponents, certain = opponents(d.Live, diff)
	w := gate.ForDecision(d, gate.Correct, diff, res.Opponents)
	res.Disruption = &w.Disruption
	if v := s.Gate.Peek(rc, w); !v.Go && (v.Check == gate.WriteBudget || v.Check == gate.Beside) {
		// Its budget spent and nothing else holding it first (the gate's
		// order), or the shipped autopilot acting (whose writes under
		// the same manager name a dry run would only describe): nothing
		// is sent, not even a dry run. Held by another check, the dry run
		// still tells whether there is a write to hold (the Judge after
		// it reports the hold).
		return held(res, v)
	}
	if !certain && !s.isVerified(id, "drifted "+stamp) {
		changes, err := s.dryRun(ctx, d)
		if err != nil {
			return s.failed(res, w, gate.Verdict{}, "server-side dry-run", d.Desired, err)
		}
		if !changes {
			s.setVerified(id, stamp)
			return engine.Result{Outcome: engine.Unchanged, Drift: diff}
		}
		// Confirmed: a write that is held (report-only, a window) is not
		// dry-run again until the object or the desired state changes.
		s.setVerified(id, "drifted "+stamp)
	}
	v, err := s.judge(ctx, rc, w, fresh)
	if err != nil {
		res.Outcome, res.Reason, res.Err = engine.Failed, err.Error(), err
		return res
	}
	if !v.Go {
		return held(res, v)
	}
	return s.apply(ctx, d, res, w, v)
}

// judge is the gate's verdict on w: on rc, or, with fresh set, on the
// HCO as the API server has it now, read only once rc's verdict would let
// the write go.
func (s *Syncer) judge(ctx context.Context, rc *rendercontext.RenderContext, w gate.Write, fresh Fresh) (gate.Verdict, error) {
	if fresh == nil {
		return s.Gate.Judge(rc, w), nil
	}
	if v := s.Gate.Peek(rc, w); !v.Go {
		return v, nil
	}
	f, err := fresh(ctx)
	if err != nil {
		return gate.Verdict{}, err
	}
	return s.Gate.Judge(f, w), nil
}

// held is the result of a write the gate did not let go.
func held(res engine.Result, v gate.Verdict) engine.Result { return v.Held(res, "") }

// failed is the result of a request that did not succeed (the gate
// classifies it: Gate.Unanswered).
func (s *Syncer) failed(res engine.Result, w gate.Write, v gate.Verdict, what string, obj *unstructured.Unstructured, err error) engine.Result {
	return s.Gate.Unanswered(res, w, v, what, obj, err)
}

func (s *Syncer) apply(ctx context.Context, d *engine.Decision, res engine.Result, w gate.Write, v gate.Verdict) engine.Result {
	obj := d.Desired.DeepCopy()
	if v.FactRollouts != "" {
		// A fact-driven rollout: counted on the object, for the gate.
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[annotations.FactRollouts] = v.FactRollouts
		obj.SetAnnotations(ann)
	}
	if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(annotations.FieldManager), client.ForceOwnership); err != nil {
		if ns := obj.GetNamespace(); d.Live == nil && ns != "" && apierrors.IsNotFound(err) {
			// The operator that owns the kind creates its namespace; until
			// it does, this is a missing dependency, not a failure, and
			// nothing was written.
			s.Gate.Unspent(w, v)
			res.Outcome, res.RetryAfter = engine.MissingDependency, NamespaceRetry
			res.Reason = fmt.Sprintf("namespace %s does not exist (is its operator installed?)", ns)
			return res
		}
		return s.failed(res, w, v, "server-side apply", obj, err)
	}
	res.Outcome, res.Object = engine.Applied, obj
	before := ""
	if d.Live != nil {
		before = d.Live.GetResourceVersion()
	}
	s.recordWrite(engine.Identity(d.Desired), before, obj)
	if d.Live != nil && obj.GetResourceVersion() == d.Live.GetResourceVersion() {
		// The server changed nothing: a verdict we believed certain was
		// not. Remember it like a dry-run's, so it is never repeated; no
		// write was made, so none is counted against the budget.
		s.Gate.Unspent(w, v)
		s.setVerified(engine.Identity(d.Desired), s.stamp(d))
		return engine.Result{Outcome: engine.Unchanged, Drift: res.Drift}
	}
	switch {
	case d.Live == nil:
		res.Reason = "created"
	case ownChange(d.Live, res.Drift):
		res.Updated = true
		res.Reason = "updated " + strings.Join(res.Drift, ", ")
	default:
		res.Reason = "corrected " + strings.Join(res.Drift, ", ")
		if len(res.Opponents) > 0 {
			res.Reason += " (changed by " + strings.Join(res.Opponents, ", ") + ")"
		}
	}
	return res
}

// ownChange: every field the write changed was still as the autopilot
// last applied it on live (its Apply entry owns each whole), so the write
// followed a change of what it renders, not anyone's edit. A field it
// cannot place (a path not understood, one nobody owns: removed by
// someone, or new) counts as a correction.
func ownChange(live *unstructured.Unstructured, drift []string) bool {
	if len(drift) == 0 || shipped.WroteLast(live) {
		// Another writer under the same field manager name: its fields
		// look like the autopilot's own, but the change was not.
		return false
	}
	for _, path := range drift {
		p, err := jsonpointer.Parse(path)
		if err != nil || !managedfields.Holds(live, p, annotations.FieldManager) {
			return false
		}
	}
	return true
}

// Forget drops what the Syncer and the gate remember of an object the
// autopilot removed itself (an asset turned off): creating it again later
// is not a correction.
func (s *Syncer) Forget(key string) {
	s.Gate.Forget(key)
	s.mu.Lock()
	delete(s.verified, key)
	delete(s.created, key)
	delete(s.wrote, key)
	s.mu.Unlock()
}

// lagging says whether live (nil: absent) is the cache's copy from before
// this process's own write of key, within CacheLag: how long it may still
// lag. The cache showing the write, another version, or the lag being
// over ends it.
func (s *Syncer) lagging(key string, live *unstructured.Unstructured) (time.Duration, *unstructured.Unstructured, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.wrote[key]
	if !ok {
		return 0, nil, false
	}
	rv := ""
	if live != nil {
		rv = live.GetResourceVersion()
	}
	left := CacheLag - s.now().Sub(w.at)
	if rv == w.before && w.after != "" && w.after != w.before && left > 0 {
		return left, w.obj.DeepCopy(), true
	}
	delete(s.wrote, key)
	return 0, nil, false
}

func (s *Syncer) recordWrite(key, before string, obj *unstructured.Unstructured) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = map[string]written{}
	}
	s.wrote[key] = written{before: before, after: obj.GetResourceVersion(), at: s.now(), obj: obj.DeepCopy()}
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
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
	// A writer under this autopilot's own field manager name owns no
	// field as another manager: named from the object (the stamp its
	// apply dropped), never absorbed as "nobody".
	return shipped.NameOpponents(live, out), certain
}

// Delete sends the one DELETE of live, which the gate let go (its
// deletion intent check asked the guard on the HCO the deletion was
// judged on), with UID and resourceVersion preconditions so a replaced or
// changed object survives; NotFound is success. Every deletion path
// (switch off, tombstone, superseded object) sends it here.
func Delete(ctx context.Context, c client.Writer, live *unstructured.Unstructured) error {
	uid, rv := live.GetUID(), live.GetResourceVersion()
	err := c.Delete(ctx, live, client.Preconditions{UID: &uid, ResourceVersion: &rv},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// stampPath is the settle stamp (annotations.Facts).
var stampPath = "/metadata/annotations/" + strings.ReplaceAll(annotations.Facts, "/", "~1")

// withoutOldStamp drops the settle stamp from diff when it is all that
// differs and the live stamp is an earlier scheme's facts alone: an
// upgrade writes nothing for it (nor does any stamp alone read as drift
// in report-only); the next real write carries the new stamp, so no object keeps an old one
// for ever (the fact budget reads only stamps of this scheme).
func withoutOldStamp(diff []string, d *engine.Decision) []string {
	if len(diff) != 1 || diff[0] != stampPath {
		return diff
	}
	if d.ReportOnly {
		// The stamp alone is bookkeeping, not the object's content: a
		// report-only object is compliant while only it differs.
		return nil
	}
	was := settle.ParseStamp(d.Live.GetAnnotations()[annotations.Facts])
	if was.Facts == "" || was.Object != "" || strings.HasPrefix(was.Facts, settle.Scheme) {
		return diff
	}
	return nil
}

// recordPath is the fact budget's record (annotations.FactRollouts).
var recordPath = "/metadata/annotations/" + strings.ReplaceAll(annotations.FactRollouts, "/", "~1")

// withoutRecord drops the fact budget's record from diff while desired
// carries the live value (engine copies it): who set it (the autopilot,
// or a person who edited it) is not drift; only a fact-driven write
// changes it (Verdict.FactRollouts).
func withoutRecord(diff []string, d *engine.Decision) []string {
	if d.Desired.GetAnnotations()[annotations.FactRollouts] != d.Live.GetAnnotations()[annotations.FactRollouts] {
		return diff
	}
	out := diff[:0:0]
	for _, p := range diff {
		if p != recordPath {
			out = append(out, p)
		}
	}
	return out
}
