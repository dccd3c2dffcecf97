// Package fleetstatus keeps a status a fleet can read without a new API:
// the ConfigMap virt-platform-autopilot-status in the autopilot's own
// namespace, holding per feature its state, reason and compliance, the
// features that need attention, and the autopilot's version. It is a
// read-only contract (docs/fleet.md): hubs (RHACM policies, Argo CD health
// checks) read it; the autopilot alone writes it, only when a feature's
// state or compliance (or the version) differs from what the ConfigMap in
// the cluster says, so steady state costs nothing, and an edit or a
// deletion by anyone else is undone at the next reconcile. While the
// autopilot is idle (no HyperConverged, or one being deleted) it says so
// instead of keeping the last features it managed.
package fleetstatus

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
)

// Name is the ConfigMap's name.
const Name = "virt-platform-autopilot-status"

// Keys of the ConfigMap's data; per feature "<feature>.state",
// "<feature>.reason" and "<feature>.compliance".
const (
	KeyVersion = "version"
	// KeyAttention lists the features degraded or drifted, comma separated.
	KeyAttention = "attention"
	// KeyHealthy is "true" when none is, else "false": one key a policy
	// can require. "false" too while the autopilot is idle.
	KeyHealthy = "healthy"
	// KeyAutopilot is "active" while the autopilot manages the platform,
	// "idle" while it cannot (KeyIdleReason says why).
	KeyAutopilot = "autopilot"
	// KeyIdleReason is why the autopilot is idle (a short code:
	// hco_absent, hco_terminating, ...); "" while active. Not a free-text
	// reason: a change of it is a change of state, and is written.
	KeyIdleReason = "idleReason"
)

// The values of KeyAutopilot.
const (
	Active = "active"
	Idle   = "idle"
)

// Compliance of a feature, as a fleet reads it.
const (
	// Compliant: on, and every asset as the autopilot applies it.
	Compliant = "Compliant"
	// Drifted: report-only, and an asset differs from what would be applied.
	Drifted = "Drifted"
	// NotApplicable: off, not applicable, excluded or paused.
	NotApplicable = "NotApplicable"
	// Unknown: degraded or waiting: whether it is as it should be cannot be said.
	Unknown = "Unknown"
)

// maxReason bounds a reason in the ConfigMap.
const maxReason = 512

// Data is the ConfigMap's data for statuses and version.
func Data(statuses []features.Status, version string) map[string]string {
	out := map[string]string{KeyVersion: version}
	var attention []string
	for _, s := range statuses {
		out[s.Name+".state"] = string(s.State)
		r := s.Reason
		if len(r) > maxReason {
			r = r[:maxReason] + "..."
		}
		out[s.Name+".reason"] = r
		out[s.Name+".compliance"] = compliance(s.State)
		if s.State == features.Degraded || s.State == features.Drifted {
			attention = append(attention, s.Name)
		}
	}
	sort.Strings(attention)
	out[KeyAttention] = strings.Join(attention, ",")
	out[KeyHealthy] = fmt.Sprint(len(attention) == 0)
	out[KeyAutopilot], out[KeyIdleReason] = Active, ""
	return out
}

// IdleData is the ConfigMap's data while the autopilot is idle for
// reason: no feature is managed, so none is listed and none is healthy.
func IdleData(reason, version string) map[string]string {
	return map[string]string{KeyVersion: version, KeyAutopilot: Idle, KeyIdleReason: reason, KeyHealthy: "false", KeyAttention: ""}
}

func compliance(s features.State) string {
	switch s {
	case features.Active:
		return Compliant
	case features.Drifted:
		return Drifted
	case features.Off, features.NotApplicable, features.Excluded, features.Paused:
		return NotApplicable
	}
	return Unknown
}

// Writer keeps the ConfigMap current. It is safe for concurrent use.
type Writer struct {
	// Reader reads the ConfigMap from a cache that watches it (no request
	// in steady state); Client writes it.
	Reader    client.Reader
	Client    client.Client
	Namespace string
	Version   string
	// Now is the clock of the cache's lag (nil: time.Now).
	Now func() time.Time
	// Budget takes a token for a write that undoes another writer's
	// change (nil: unbounded), so a writer that keeps changing the
	// ConfigMap (a policy set to enforce other values) is no hot loop.
	Budget func(id string) (bool, time.Duration)
	// Refund gives back the token Budget took for a write that changed
	// nothing (refused or failed at the API server): a refusal is not a
	// fight (nil: nothing to give back).
	Refund func(id string)

	mu sync.Mutex
	// wrote is the last write, while the cache may not show it yet: safe
	// to lose (a restart at worst re-applies the same data once).
	wrote *written
	// said is the data of the last write: writing it again is undoing
	// someone else's change (budgeted). Safe to lose: a restart's first
	// undo goes unbudgeted.
	said map[string]string
}

// written is one write: the resourceVersion the cache showed before it
// ("" absent), the server's after it, the data, and when.
type written struct {
	before, after string
	data          map[string]string
	at            time.Time
}

// CacheLag bounds how long the cache may still show the ConfigMap as it
// was before the autopilot's own write: within it the write is trusted,
// after it the cache is (someone deleted or changed it since).
const CacheLag = 10 * time.Second

// Object is the ConfigMap's key, as a cache reads it.
func Object(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(namespace)
	u.SetName(Name)
	return u
}

// Write sets the ConfigMap to statuses when a state, a compliance or the
// version differs from what it holds in the cluster (the autopilot's own
// reasons alone never cause a write); changed says whether it wrote,
// recheck when to look again (the cache may not show the cluster yet).
func (w *Writer) Write(ctx context.Context, statuses []features.Status) (changed bool, recheck time.Duration, err error) {
	return w.write(ctx, Data(statuses, w.Version))
}

// WriteIdle says the autopilot is idle, and why (report.IdleReason).
func (w *Writer) WriteIdle(ctx context.Context, reason string) (changed bool, recheck time.Duration, err error) {
	return w.write(ctx, IdleData(reason, w.Version))
}

func (w *Writer) write(ctx context.Context, data map[string]string) (bool, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cm := Object(w.Namespace)
	live := cm
	switch err := w.Reader.Get(ctx, client.ObjectKeyFromObject(cm), cm); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return false, 0, fmt.Errorf("read ConfigMap %s/%s: %w", w.Namespace, Name, err)
	}
	rv := ""
	if live != nil {
		rv = live.GetResourceVersion()
	}
	if w.wrote != nil {
		switch {
		case rv == w.wrote.after:
			w.wrote = nil // the cache shows the write: it is the truth again
		case rv == w.wrote.before && w.now().Sub(w.wrote.at) < CacheLag:
			if !differs(nil, w.wrote.data, w.desired(data)) {
				// Written, not yet in the cache; or deleted again at once
				// (a ConfigMap it created reads absent either way): look
				// again once the lag is over, when the cache is the truth.
				return false, CacheLag - w.now().Sub(w.wrote.at), nil
			}
		default:
			w.wrote = nil // changed or deleted since
		}
	}
	var held map[string]string
	if live != nil {
		held, _, _ = unstructured.NestedStringMap(live.Object, "data")
	}
	u := w.desired(data)
	if !differs(live, held, u) {
		return false, 0, nil
	}
	// Saying again what it said last is undoing someone else's change
	// (an edit, or a deletion: a writer that keeps deleting it is no
	// less a fight).
	took := false
	if undo := w.said != nil && !differs(nil, w.said, u); undo && w.Budget != nil {
		ok, wait := w.Budget(engine.Identity(u))
		if !ok {
			return false, 0, &PausedError{Wait: wait}
		}
		took = true
	}
	if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(annotations.FieldManager), client.ForceOwnership); err != nil {
		if took && w.Refund != nil {
			w.Refund(engine.Identity(u)) // nothing changed: no budget spent
		}
		return false, 0, fmt.Errorf("write ConfigMap %s/%s: %w", w.Namespace, Name, err)
	}
	w.wrote = &written{before: rv, after: u.GetResourceVersion(), data: data, at: w.now()}
	w.said = data
	return true, 0, nil
}

// PausedError says writes that undo another writer's changes are paused
// until the budget refills (Wait): someone keeps changing the ConfigMap.
type PausedError struct{ Wait time.Duration }

func (e *PausedError) Error() string {
	return fmt.Sprintf("ConfigMap %s keeps being changed by another writer: writes paused for %s", Name, e.Wait.Round(time.Second))
}

// desired is the ConfigMap the autopilot applies to say data.
func (w *Writer) desired(data map[string]string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": Name, "namespace": w.Namespace,
			"labels": map[string]any{"app.kubernetes.io/name": "virt-platform-autopilot", "app.kubernetes.io/component": "fleet-status"}},
		"data": toAny(data),
	}}
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// differs reports whether the ConfigMap holding held (live: the object,
// nil when absent or not read) must be written to say data: a key of data
// is missing, or other than a reason differs, or a key the autopilot
// applied before is no longer in data (a feature left the catalog, the
// autopilot went idle), or one of its labels is missing or changed, or
// another writer took over a key it sets (managedFields: a reason someone
// else edited). A reason the autopilot's own words changed alone is not
// written. Keys other writers added are theirs: never written over, never
// a reason to write.
func differs(live *unstructured.Unstructured, held map[string]string, desired *unstructured.Unstructured) bool {
	data, _, _ := unstructured.NestedStringMap(desired.Object, "data")
	for k, v := range data {
		h, ok := held[k]
		if !ok || (h != v && !strings.HasSuffix(k, ".reason")) {
			return true
		}
	}
	if live == nil {
		return false
	}
	for k, v := range desired.GetLabels() {
		if l, ok := live.GetLabels()[k]; !ok || l != v {
			return true
		}
	}
	if len(managedfields.Unowned(live, desired.Object, annotations.FieldManager)) > 0 {
		return true
	}
	for _, p := range managedfields.Dropped(live, desired.Object, annotations.FieldManager) {
		if !strings.HasSuffix(p, ".reason") {
			return true
		}
	}
	return false
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
