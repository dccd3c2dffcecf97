package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
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
}

// NamespaceRetry is how soon an object whose namespace is missing is tried again.
var NamespaceRetry = time.Minute

// ObjectKey identifies an object across kinds: "Kind/namespace/name".
func ObjectKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Sync applies d.Desired when it differs from d.Live. d must be Included.
func (s *Syncer) Sync(ctx context.Context, d *Decision) Result {
	if d.Outcome != Included || d.Desired == nil {
		return Result{Outcome: d.Outcome, Reason: d.Reason}
	}
	key := ObjectKey(d.Desired)
	var diff []string
	if d.Live != nil {
		diff = drift.Diff(d.Desired, d.Live, annotations.FieldManager)
		if len(diff) == 0 {
			return Result{Outcome: Unchanged}
		}
		stamp := s.stamp(d)
		if s.isVerified(key, stamp) {
			return Result{Outcome: Unchanged}
		}
		changes, err := s.dryRun(ctx, d)
		if err != nil {
			return Result{Outcome: Failed, Reason: fmt.Sprintf("server-side dry-run: %v", err), Err: err}
		}
		if !changes {
			s.setVerified(key, stamp)
			return Result{Outcome: Unchanged, Drift: diff}
		}
	} else {
		diff = []string{"(object absent)"}
	}
	res := Result{Drift: diff}
	if d.Live != nil {
		res.Opponents = opponents(d.Live, diff)
	}
	if ok, wait := s.Throttle.Allow(key); !ok {
		res.Outcome, res.RetryAfter = Throttled, wait
		res.Reason = fmt.Sprintf("corrective writes to %s are paused for %s: %s keep changing", key, wait.Round(time.Second), fieldsAndManagers(diff, res.Opponents))
		return res
	}
	obj := d.Desired.DeepCopy()
	if err := s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(annotations.FieldManager), client.ForceOwnership); err != nil {
		if ns := obj.GetNamespace(); d.Live == nil && ns != "" && apierrors.IsNotFound(err) {
			// The operator that owns the kind creates its namespace; until
			// it does, this is a missing dependency, not a failure.
			res.Outcome, res.RetryAfter = MissingDependency, NamespaceRetry
			res.Reason = fmt.Sprintf("namespace %s does not exist (is its operator installed?)", ns)
			return res
		}
		res.Outcome, res.Reason, res.Err = Failed, fmt.Sprintf("server-side apply: %v", err), err
		return res
	}
	res.Outcome, res.Object = Applied, obj
	if d.Live == nil {
		res.Reason = "created"
	} else {
		res.Reason = "corrected " + strings.Join(diff, ", ")
	}
	return res
}

// dryRun reports whether applying desired would change the live object.
func (s *Syncer) dryRun(ctx context.Context, d *Decision) (bool, error) {
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

func (s *Syncer) stamp(d *Decision) string {
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

// opponents names the other managers owning the drifted fields.
func opponents(live *unstructured.Unstructured, diff []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, path := range diff {
		p, err := jsonpointer.Parse(path)
		if err != nil {
			continue
		}
		for _, m := range managedfields.Owners(live, p, annotations.FieldManager) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

func fieldsAndManagers(diff, managers []string) string {
	who := "another actor"
	if len(managers) > 0 {
		who = "field manager(s) " + strings.Join(managers, ", ")
	}
	return fmt.Sprintf("fields %s, changed by %s", strings.Join(diff, ", "), who)
}
