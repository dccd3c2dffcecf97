// Package tombstone removes objects earlier releases created and this one
// no longer ships. A tombstone is a manifest under assets/tombstones/<release>/
// naming the object; it is deleted only when provably the autopilot's.
package tombstone

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/apply"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
)

// CarriedByAnnotation is set on a tombstone manifest to name the catalog
// assets (comma separated) whose object carries the obsolete object's
// settings now: the deletion goes with that asset's write (or once its
// object is in place), so the pool rolls once, never without the
// settings in between.
const CarriedByAnnotation = "platform.kubevirt.io/carried-by"

// CarriedOnlyAnnotation "true" on a tombstone manifest keeps the object
// while none of its carriers is active: it is deleted only with (or
// after) a carrier's write. For an object another writer left that still
// does its job (the autopilot OpenShift Virtualization ships, pkg/shipped):
// deleting it with no replacement would drop what it does.
const CarriedOnlyAnnotation = "platform.kubevirt.io/carried-only"

// Tombstone names one obsolete object.
type Tombstone struct {
	Release string                     `json:"release"`
	Path    string                     `json:"path"`
	Object  *unstructured.Unstructured `json:"-"`
	// CarriedBy names the assets (comma separated) that carry its
	// settings now ("" none).
	CarriedBy string `json:"carriedBy,omitempty"`
	// CarriedOnly: kept while none of CarriedBy is active
	// (CarriedOnlyAnnotation).
	CarriedOnly bool `json:"carriedOnly,omitempty"`
}

// Key is the object's identity (engine.Identity).
func (t Tombstone) Key() string { return engine.Identity(t.Object) }

// Load reads every tombstone under dir (one folder per release).
func Load(fsys fs.FS, dir string) ([]Tombstone, error) {
	var out []Tombstone
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("tombstone %s: %w", p, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return fmt.Errorf("tombstone %s: %w", p, err)
		}
		if u.GetName() == "" {
			return fmt.Errorf("tombstone %s: metadata.name is required", p)
		}
		rel := strings.TrimPrefix(path.Dir(p), dir+"/")
		t := Tombstone{Release: rel, Path: p, Object: u, CarriedBy: u.GetAnnotations()[CarriedByAnnotation]}
		switch only := u.GetAnnotations()[CarriedOnlyAnnotation]; {
		case only == "true" && t.CarriedBy != "":
			t.CarriedOnly = true
		case only != "":
			return fmt.Errorf("tombstone %s: %s %q: want \"true\" beside %s", p, CarriedOnlyAnnotation, only, CarriedByAnnotation)
		}
		out = append(out, t)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// Status is one tombstone's last outcome.
type Status string

// Tombstone outcomes.
const (
	Gone    Status = "Gone"    // deleted now or confirmed absent
	Skipped Status = "Skipped" // present but not provably ours: left alone
	Error   Status = "Error"   // the read or delete failed; retried next reconcile
)

// Result reports one tombstone.
type Result struct {
	Tombstone Tombstone
	Status    Status
	Deleted   bool // true only when this pass deleted it
	Reason    string
	// Live is the object as it was when deleted (Deleted only).
	Live *unstructured.Unstructured `json:"-"`
	// Disruption is what its deletion does to nodes, as the hold judged
	// it (deleted, or waiting to be).
	Disruption engine.Disruption `json:"-"`
	// Impact says what that rollout does to the pools' VMs (set by the
	// caller, for a deletion that reboots a pool).
	Impact string `json:"impact,omitempty"`
	// Err is the failure of an Error (its read, its deletion); RetryAfter
	// when its backoff lets it be tried again.
	Err        error         `json:"-"`
	RetryAfter time.Duration `json:"-"`
}

// Backoff paces a tombstone whose read or deletion failed, each on its
// own (the controller's gate): a refusal or an outage costs no request
// per reconcile, and never delays the others.
type Backoff interface {
	Failed(key string) time.Duration
	Succeeded(key string)
	// Attempt is the gate's answer to whether key may be tried now.
	Attempt(key string) gate.Verdict
}

// Reaper processes tombstones at no API cost in steady state:
//   - a kind the autopilot watches is read from its label-filtered cache.
//     Only labelled objects can be deleted, and every labelled object is in
//     that cache, so a miss there means nothing deletable exists (it is no
//     proof the object is absent, and is not used as one);
//   - any other kind is read from the API server once; an object confirmed
//     gone is not read again by this process.
type Reaper struct {
	Cache  client.Reader
	Reader client.Reader
	Writer client.Writer
	// Watched reports whether Cache holds the kind.
	Watched func(schema.GroupVersionKind) bool
	// Backoff paces failures (nil: every pass tries again).
	Backoff Backoff

	mu   sync.Mutex
	gone map[string]bool
	// skipped remembers, for kinds read from the API server, objects left
	// in place and when to read them again (once a minute, not every pass).
	skipped map[string]skip
	// failed is each failing tombstone's last result, reported again
	// while its backoff holds it.
	failed map[string]Result
}

type skip struct {
	until time.Time
	res   Result
}

// Recheck is how long a skipped object of an unwatched kind is not read again.
var Recheck = time.Minute

// Reap processes every tombstone; failures are reported, never fatal.
// Whether an object found may be deleted, and when, is hold's alone (the
// controller's gate: deletion intent, report-only, input, dependency,
// window, pools); with no hold nothing is deleted.
func (r *Reaper) Reap(ctx context.Context, tombstones []Tombstone, hold Hold) []Result {
	out := make([]Result, 0, len(tombstones))
	for _, t := range tombstones {
		out = append(out, r.reapOne(ctx, t, hold))
	}
	return out
}

// Hold judges the deletion of live: what it does to nodes, and the
// gate's verdict (err: the verdict could not be reached, e.g. the HCO
// could not be re-read; nothing is deleted).
type Hold func(live *unstructured.Unstructured) (engine.Disruption, gate.Verdict, error)

func (r *Reaper) reapOne(ctx context.Context, t Tombstone, hold Hold) Result {
	if r.Backoff == nil {
		return r.try(ctx, t, hold)
	}
	key := gate.TombstoneRetry(t.Key())
	r.mu.Lock()
	prev, failing := r.failed[t.Key()]
	r.mu.Unlock()
	if v := r.Backoff.Attempt(key); !v.Go && failing {
		prev.RetryAfter = v.RetryAfter
		return prev // not read, not sent: its last failure stands
	}
	res := r.try(ctx, t, hold)
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.Status == Error {
		res.RetryAfter = r.Backoff.Failed(key)
		if r.failed == nil {
			r.failed = map[string]Result{}
		}
		r.failed[t.Key()] = res
		return res
	}
	r.Backoff.Succeeded(key)
	delete(r.failed, t.Key())
	return res
}

// try reads t's object and deletes it when hold lets it go.
func (r *Reaper) try(ctx context.Context, t Tombstone, hold Hold) Result {
	res := Result{Tombstone: t}
	gvk := t.Object.GroupVersionKind()
	reader := r.Reader
	watched := r.Watched != nil && r.Watched(gvk)
	if watched {
		reader = r.Cache
	} else if r.isGone(t.Key()) {
		res.Status = Gone
		return res
	} else if prev, ok := r.recentSkip(t.Key()); ok {
		return prev
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err := reader.Get(ctx, client.ObjectKeyFromObject(t.Object), live)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		r.markGone(t.Key())
		res.Status = Gone
		return res
	case err != nil:
		res.Status, res.Reason, res.Err = Error, err.Error(), err
		return res
	}
	if hold == nil {
		res.Status, res.Reason = Skipped, "waits: nothing judges its deletion"
		return res
	}
	dis, v, err := hold(live)
	switch {
	case err != nil:
		res.Status, res.Reason, res.Err = Error, err.Error(), err
		return res
	case v.Kept():
		res.Status, res.Reason = Skipped, "may not delete: "+v.Reason
		if !watched {
			r.rememberSkip(t.Key(), res)
		}
		return res
	case !v.Go:
		res.Status, res.Reason, res.Disruption = Skipped, "waits: "+v.Reason, dis
		if !watched {
			// Held (a carrier off, the shipped autopilot acting): read
			// again once per Recheck, not on every pass.
			r.rememberSkip(t.Key(), res)
		}
		return res
	}
	if err := apply.Delete(ctx, r.Writer, live); err != nil {
		res.Status, res.Reason, res.Err, res.Disruption = Error, err.Error(), err, dis
		return res
	}
	r.markGone(t.Key())
	res.Status, res.Deleted, res.Live, res.Disruption = Gone, true, live, dis
	return res
}

func (r *Reaper) recentSkip(k string) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.skipped[k]
	if !ok || time.Now().After(s.until) {
		return Result{}, false
	}
	return s.res, true
}

func (r *Reaper) rememberSkip(k string, res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skipped == nil {
		r.skipped = map[string]skip{}
	}
	r.skipped[k] = skip{until: time.Now().Add(Recheck), res: res}
}

// MayExist reports whether t's object may still exist: false only when a
// watched kind's cache does not hold it, or an unwatched kind's object
// was seen gone (no request either way). A write that would carry its
// deletion then need not judge one.
func (r *Reaper) MayExist(ctx context.Context, t Tombstone) bool {
	gvk := t.Object.GroupVersionKind()
	if r.Watched == nil || !r.Watched(gvk) {
		return !r.isGone(t.Key())
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err := r.Cache.Get(ctx, client.ObjectKeyFromObject(t.Object), live)
	return !apierrors.IsNotFound(err)
}

func (r *Reaper) isGone(k string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[k]
}

func (r *Reaper) markGone(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone == nil {
		r.gone = map[string]bool{}
	}
	r.gone[k] = true
}
