// Package dryrun says what a reconcile would change on a live cluster:
// each decision applied by server-side dry-run and diffed against the live
// object, and the tombstones that would go (render --output diff).
package dryrun

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/drift"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gather"
	"github.com/kubevirt/virt-platform-autopilot/pkg/hcoreact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/objyaml"
	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/settle"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tombstone"
)

// Change is what applying would do to one object.
type Change string

// Changes, like kubectl diff's.
const (
	Created   Change = "created"
	Changed   Change = "changed"
	Unchanged Change = "unchanged"
	Deleted   Change = "deleted"
)

// ObjectDiff is the preview of one object.
type ObjectDiff struct {
	Asset  string `json:"asset,omitempty"`
	Object string `json:"object"`
	Change Change `json:"change"`
	Reason string `json:"reason,omitempty"`
	Diff   string `json:"diff,omitempty"`
	// Disruption is what the change does to nodes (none when unchanged).
	Disruption engine.Disruption `json:"disruption"`
	// Held says why the change is not sent now, as the controller's gate
	// judges it (Outcome: Staged for a closed window, Settling, Invalid,
	// MissingDependency for a carrier's write that waits, ...).
	Held    string         `json:"held,omitempty"`
	Outcome engine.Outcome `json:"outcome,omitempty"`
	// Deferred are fields left to their declared owners, which the diff
	// does not change (platform.kubevirt.io/yield-to).
	Deferred []engine.Deferral `json:"deferred,omitempty"`
	// Reactions are what the HCO does about a change of its CR
	// (pkg/hcoreact): none of them rolls a pool.
	Reactions []hcoreact.Reaction `json:"hcoReactions,omitempty"`

	// write is the change as the gate judges it; asset and deletes say
	// whose step it is (a decision's write, or a deletion), carriedBy the
	// assets a tombstone's deletion waits for.
	write       gate.Write
	asset       string
	deletes     bool
	carriedBy   string
	carriedOnly bool
	// check is the gate's check that holds it (gate.Order).
	check string
	// keptAs introduces the reason a deletion the gate keeps (not
	// intended, not provably the autopilot's) is shown unchanged.
	keptAs string
	// rides, for the object a replacement deletes with its write, is that
	// deletion as the controller judges it once the write went
	// (gate.Riding: intent and report-only).
	rides *gate.Write
}

// Diff computes, with server-side dry-runs under the autopilot's field
// manager, what a reconcile would change: applies of included assets
// (with the object each replaces), removals of inactive opt-in assets, and
// tombstone deletions. Each change is judged by the controller's gate
// (gate.Judge, the same checks in the same order) as a controller that
// starts now would judge it: no budget spent, its settle and pool clocks
// starting now; a tombstone whose settings an asset carries waits for
// that asset's write as the controller's does (engine.CarrierWaits). What
// the gate holds is marked Held, with its outcome; what each change does
// to nodes is the gate's description of the write.
func Diff(ctx context.Context, c client.Client, cat *catalog.Catalog, rc *rendercontext.RenderContext, ds []engine.Decision, tombs []tombstone.Tombstone, now time.Time) ([]ObjectDiff, error) {
	out, err := diff(ctx, c, rc, ds, tombs)
	g := gate.New(gate.Config{Now: func() time.Time { return now }, SettlePeriod: settle.DefaultPeriod, Catalog: cat})
	steps := map[string]engine.Step{}
	for i := range ds {
		steps[ds[i].Asset.Name] = engine.Step{Decision: &ds[i], Result: engine.Reported(&ds[i])}
	}
	for i := range out {
		o := &out[i]
		if o.Change == Unchanged {
			if o.asset != "" && !o.deletes {
				steps[o.asset] = engine.Step{Decision: steps[o.asset].Decision, Result: engine.Result{Outcome: engine.Unchanged}}
			}
			continue
		}
		if o.carriedBy != "" {
			o.write.Waits, _ = engine.CarrierWaits(o.carriedBy, o.carriedOnly, steps)
		}
		o.Disruption = o.write.Disruption
		v := g.Judge(rc, o.write)
		if v.Go && o.rides != nil {
			v = g.Judge(rc, *o.rides)
		}
		if v.Kept() {
			*o = ObjectDiff{Asset: o.Asset, Object: o.Object, Change: Unchanged, Reason: o.keptAs + v.Reason}
			continue
		}
		if !v.Go {
			o.Held, o.Outcome, o.check = v.Reason, v.Outcome, v.Check
		}
		if o.asset != "" && !o.deletes {
			res := engine.Result{Outcome: engine.Applied}
			if !v.Go {
				res = v.Held(res, "")
			}
			steps[o.asset] = engine.Step{Decision: steps[o.asset].Decision, Result: res}
		}
	}
	return out, err
}

func diff(ctx context.Context, c client.Client, rc *rendercontext.RenderContext, ds []engine.Decision, tombs []tombstone.Tombstone) ([]ObjectDiff, error) {
	var out []ObjectDiff
	for i := range ds {
		d := &ds[i]
		switch {
		case d.Verdict == engine.VerdictIncluded:
			od, err := applyDiff(ctx, c, d)
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", d.Asset.Name, err)
			}
			od.asset = d.Asset.Name
			out = append(out, od)
			if d.Replaces != nil {
				// The object it replaces goes with its write (judged with
				// it: the write's pools are both objects'), or alone when
				// its own object is in place already.
				rm := deletion(d.Asset.Name, d.Replaces, "replaced by "+od.Object)
				rm.write, rm.asset, rm.deletes = od.write, d.Asset.Name, true
				rm.keptAs = "replaced by " + od.Object + ", object kept: "
				alone := gate.ForRemoval(rc, gate.Supersede, d.Asset.Name, d.Replaces, d.ReportOnly)
				if od.Change == Unchanged {
					rm.write = alone
				} else {
					rides := gate.Riding(alone)
					rm.rides = &rides
				}
				out = append(out, rm)
			}
		case engine.RemovalCandidate(d, rc) != nil && d.Live != nil:
			// Whether it may go at all is the gate's deletion intent check.
			od := deletion(d.Asset.Name, d.Live, "asset turned off: "+d.Reason)
			od.write = gate.ForRemoval(rc, gate.SwitchOff, d.Asset.Name, d.Live, d.ReportOnly)
			od.asset, od.deletes, od.keptAs = d.Asset.Name, true, "asset turned off, object kept: "
			out = append(out, od)
		}
	}
	for _, t := range tombs {
		live, err := gather.Object(ctx, c, t.Object)
		if err != nil {
			return nil, err
		}
		if live == nil {
			continue
		}
		od := deletion("", live, "tombstone "+t.Path)
		od.write = gate.ForRemoval(rc, gate.Tombstone, "", live, false)
		od.deletes, od.carriedBy, od.carriedOnly, od.keptAs = true, t.CarriedBy, t.CarriedOnly, "tombstone "+t.Path+" not applied: "
		out = append(out, od)
	}
	return out, nil
}

func applyDiff(ctx context.Context, c client.Client, d *engine.Decision) (ObjectDiff, error) {
	od := ObjectDiff{Asset: d.Asset.Name, Object: engine.ObjectKey(d.Desired), Deferred: d.Deferred}
	obj := d.Desired.DeepCopy()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(annotations.FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return od, fmt.Errorf("server-side dry-run: %w", err)
	}
	var before, after string
	if d.Live != nil {
		before, after = toYAML2(d.Live, obj)
	} else {
		after = toYAML(obj)
	}
	od.Diff = unifiedDiff("live/"+od.Object, "autopilot/"+od.Object, before, after)
	if obj.GroupVersionKind() == rendercontext.HCOGVK {
		od.Reactions = hcoreact.Of(d.Live, obj)
	}
	switch {
	case d.Live == nil:
		od.Change = Created
	case od.Diff == "":
		od.Change = Unchanged
	default:
		od.Change = Changed
	}
	switch od.Change {
	case Created:
		od.write = gate.ForDecision(d, gate.Create, []string{"(object absent)"}, nil)
	case Changed:
		fields := engine.WithoutDeferred(drift.Diff(d.Desired, d.Live, annotations.FieldManager, d.Structure), d.Deferred)
		if len(fields) == 0 {
			// The server changes what the local verdict does not see:
			// unknown, so read as reaching nodes.
			fields = []string{"/spec"}
		}
		od.write = gate.ForDecision(d, gate.Correct, fields, nil)
	}
	return od, nil
}

func deletion(asset string, live *unstructured.Unstructured, reason string) ObjectDiff {
	key := engine.ObjectKey(live)
	return ObjectDiff{Asset: asset, Object: key, Change: Deleted, Reason: reason,
		Diff: unifiedDiff("live/"+key, "/dev/null", toYAML(live), "")}
}

// toYAML renders an object for diffing, without what every write changes.
func toYAML(u *unstructured.Unstructured) string {
	y, _ := objyaml.Marshal(forDiff(u))
	return string(y)
}

// toYAML2 renders both sides of a diff by the same writer.
func toYAML2(a, b *unstructured.Unstructured) (string, string) {
	y, err := objyaml.MarshalAll(forDiff(a), forDiff(b))
	if err != nil {
		return "", ""
	}
	return string(y[0]), string(y[1])
}

func forDiff(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	decodeFiles(c) // before redaction: a credential in a file's text is redacted too
	c = redact.Object(c).DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c.Object
}

// RebootPools are the pools applying diffs would reboot, sorted.
func RebootPools(diffs []ObjectDiff) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range diffs {
		if !d.Disruption.Reboot {
			continue
		}
		for _, p := range d.Disruption.Rolled() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// DisruptionSummary says what applying diffs would do to nodes: per pool,
// the objects that roll it, and its nodes and VMs (impacts, by pool;
// without one, the node count from node roles: the master pool holds the
// control-plane nodes, worker the others); then the changes MCO applies
// without a drain, by the cluster's node disruption policy, and how.
func DisruptionSummary(diffs []ObjectDiff, t rendercontext.Topology, impacts map[string]impact.Pool) string {
	byPool := map[string][]string{}
	var pools, light []string
	for _, d := range diffs {
		if len(d.Disruption.Actions) > 0 {
			light = append(light, fmt.Sprintf("  pool %s: %s %s: %s\n", poolLabel(d.Disruption.Pool), d.Object, d.Change, strings.Join(d.Disruption.Actions, ", ")))
		}
		if !d.Disruption.Reboot {
			continue
		}
		what := d.Object + " " + string(d.Change)
		switch {
		case d.check == "window":
			what += " (staged until the disruption window opens)"
		case d.Held != "":
			what += " (held, " + string(d.Outcome) + ": " + d.Held + ")"
		}
		rolled := d.Disruption.Rolled()
		if len(rolled) == 0 {
			rolled = []string{""}
		}
		// An object appears under every pool it rolls.
		for _, p := range rolled {
			if _, seen := byPool[p]; !seen {
				pools = append(pools, p)
			}
			byPool[p] = append(byPool[p], what)
		}
	}
	var b strings.Builder
	if len(pools) == 0 {
		b.WriteString("Disruption: none: no node reboots.\n")
	} else {
		sort.Strings(pools)
		b.WriteString("Disruption: applying reboots nodes. The Machine Config Operator drains and reboots each pool's nodes in turn (maxUnavailable at once):\n")
	}
	for _, p := range pools {
		name := poolLabel(p)
		if im, ok := impacts[p]; ok {
			fmt.Fprintf(&b, "  pool %s: %s\n    %s\n", name, strings.Join(byPool[p], ", "), im)
			continue
		}
		nodes := "unknown number of"
		switch p {
		case "worker":
			nodes = strconv.Itoa(t.Workers)
		case "master":
			nodes = strconv.Itoa(t.Masters)
		}
		fmt.Fprintf(&b, "  pool %s (%s nodes): %s\n", name, nodes, strings.Join(byPool[p], ", "))
	}
	if len(light) > 0 {
		sort.Strings(light)
		b.WriteString("Without a reboot or a drain (the node disruption policy): the Machine Config Operator takes these actions on each node of the pool:\n")
		b.WriteString(strings.Join(light, ""))
	}
	return b.String()
}

func poolLabel(p string) string {
	if p == "" {
		return "(pool not named by the object)"
	}
	return p
}
