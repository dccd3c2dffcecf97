package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/kubeletdropin"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/reservation"
)

// kubeletUnit is the MachineConfig MCO renders a role's kubelet.service
// into, with or without the drop-in folder on the command line.
func kubeletUnit(role string, configDir bool) *unstructured.Unstructured {
	exec := "ExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf"
	if configDir {
		exec += " \\\n      --config-dir=/etc/openshift/kubelet.conf.d"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"config": map[string]any{"systemd": map[string]any{"units": []any{
		map[string]any{"name": "kubelet.service", "enabled": true, "contents": "[Service]\n" + exec + "\n"},
	}}}}}}
	u.SetGroupVersionKind(rendercontext.MachineConfigGVK)
	u.SetName("01-" + role + "-kubelet")
	return u
}

func unitKey(role string) rendercontext.ObjectKey {
	return rendercontext.ObjectKey{GVK: rendercontext.MachineConfigGVK, Name: "01-" + role + "-kubelet"}
}

func pool(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"machineConfigSelector": map[string]any{"matchLabels": map[string]any{"machineconfiguration.openshift.io/role": name}},
	}}}
	u.SetGroupVersionKind(rendercontext.PoolGVK)
	u.SetName(name)
	u.SetLabels(map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""})
	return u
}

// adminKC is an admin's KubeletConfig for pool setting spec fields.
func adminKC(name, pool string, spec map[string]any) *unstructured.Unstructured {
	s := map[string]any{"machineConfigPoolSelector": map[string]any{"matchLabels": map[string]any{"pools.operator.machineconfiguration.openshift.io/" + pool: ""}}}
	for k, v := range spec {
		s[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": s}}
	u.SetGroupVersionKind(rendercontext.KubeletConfigGVK)
	u.SetName(name)
	return u
}

// dropInContext is a cluster whose worker kubelet reads drop-ins (or
// not), with the KubeletConfigs kcs and the CPUManager gate.
func dropInContext(workerDir bool, cpu bool, kcs ...*unstructured.Unstructured) *rendercontext.RenderContext {
	rc := newContext(nil)
	if cpu {
		rc.HCO["spec"] = map[string]any{"featureGates": []any{map[string]any{"name": "CPUManager"}}}
	}
	rc.Pools = []*unstructured.Unstructured{pool("master"), pool("worker")}
	rc.Objects = map[rendercontext.ObjectKey]*unstructured.Unstructured{
		unitKey("worker"): kubeletUnit("worker", workerDir), unitKey("master"): kubeletUnit("master", false),
	}
	rc.Peers = map[schema.GroupVersionKind][]*unstructured.Unstructured{rendercontext.KubeletConfigGVK: kcs}
	return rc
}

func decisions(t *testing.T, rc *rendercontext.RenderContext, live liveMap) map[string]engine.Decision {
	t.Helper()
	ev, cat, _ := setup(t, nil)
	out := map[string]engine.Decision{}
	for _, d := range ev.Preview(context.Background(), cat, rc, live).Decisions {
		out[d.Asset.Name] = d
	}
	return out
}

// The form follows MCO's kubelet.service for the role: a KubeletConfig
// where the kubelet reads no drop-in folder (or no unit is rendered, as
// offline), the drop-in where it does, and neither while the unit cannot
// be read (unknown never picks a form).
func TestKubeletFormFollowsTheUnit(t *testing.T) {
	for _, c := range []struct {
		name         string
		set          func(rc *rendercontext.RenderContext)
		kc, dropIn   engine.Verdict
		dropInReason string
	}{
		{"4.20: no --config-dir", func(*rendercontext.RenderContext) {}, engine.VerdictIncluded, engine.VerdictInactive, ""},
		{"4.21: --config-dir", func(rc *rendercontext.RenderContext) { rc.Objects[unitKey("worker")] = kubeletUnit("worker", true) },
			engine.VerdictInactive, engine.VerdictIncluded, ""},
		{"no unit rendered", func(rc *rendercontext.RenderContext) { rc.Objects[unitKey("worker")] = nil }, engine.VerdictIncluded, engine.VerdictInactive, ""},
		{"unit unreadable", func(rc *rendercontext.RenderContext) {
			rc.ObjectErrs = map[rendercontext.ObjectKey]error{unitKey("worker"): errors.New("forbidden")}
		}, engine.VerdictFailed, engine.VerdictFailed, "forbidden"},
		{"unit without kubelet.service", func(rc *rendercontext.RenderContext) {
			u := kubeletUnit("worker", true)
			u.Object["spec"] = map[string]any{"config": map[string]any{}}
			rc.Objects[unitKey("worker")] = u
		}, engine.VerdictFailed, engine.VerdictFailed, "no kubelet.service"},
	} {
		rc := dropInContext(false, false)
		c.set(rc)
		ds := decisions(t, rc, nil)
		kc, di := ds["kubelet-worker"], ds["kubelet-dropin-worker"]
		if kc.Verdict != c.kc || di.Verdict != c.dropIn || !strings.Contains(di.Reason, c.dropInReason) {
			t.Errorf("%s: KubeletConfig %s (%s), drop-in %s (%s)", c.name, kc.Verdict, kc.Reason, di.Verdict, di.Reason)
		}
		if di.Verdict == engine.VerdictIncluded && di.Desired.GetKind() != "MachineConfig" {
			t.Errorf("%s: the drop-in renders a %s", c.name, di.Desired.GetKind())
		}
	}
}

// The fields an admin's KubeletConfig may set: plain settings, and every
// member of the groups that only work together.
var adminFields = map[string]any{
	"maxPods": int64(300), "nodeStatusMaxImages": int64(50), "podPidsLimit": int64(8192),
	"imageGCHighThresholdPercent": int64(80), "evictionHard": map[string]any{"memory.available": "500Mi"},
	"kubeReserved": map[string]any{"memory": "2Gi"}, "systemReserved": map[string]any{"memory": "3Gi"},
	"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-3", "topologyManagerPolicy": "single-numa-node",
	"memoryManagerPolicy": "None", "enforceNodeAllocatable": []any{"pods"}, "reservedMemory": []any{},
}

// Generated admin KubeletConfigs on the worker pool, with the CPUManager
// gate on and off: the drop-in never sets what an admin's KubeletConfig
// sets, keeps everything else, never keeps part of a group that only works
// whole, reports each setting it left out with the KubeletConfig holding
// it, and what it ships still passes the kubelet's memory arithmetic.
func TestDropInLeavesTheAdminsSettings(t *testing.T) {
	names := make([]string, 0, len(adminFields)+1)
	for k := range adminFields {
		names = append(names, k)
	}
	names = append(names, "autoSizingReserved")
	sort.Strings(names)
	rnd := rand.New(rand.NewPCG(7, 27))
	var subsets [][]string
	for _, n := range names {
		subsets = append(subsets, []string{n}) // each alone
	}
	subsets = append(subsets, nil)
	for range 300 {
		var s []string
		for _, n := range names {
			if rnd.IntN(4) == 0 {
				s = append(s, n)
			}
		}
		subsets = append(subsets, s)
	}
	// The settings of the drop-in with no admin KubeletConfig: the baseline.
	full := map[bool]map[string]any{}
	for _, cpu := range []bool{false, true} {
		d := decisions(t, dropInContext(true, cpu), nil)["kubelet-dropin-worker"]
		if d.Verdict != engine.VerdictIncluded {
			t.Fatalf("cpu=%v: %s %s", cpu, d.Verdict, d.Reason)
		}
		full[cpu] = settingsOf(t, d.Desired)
	}
	leftSomething := 0
	for _, cpu := range []bool{false, true} {
		for _, set := range subsets {
			spec := map[string]any{"kubeletConfig": map[string]any{}}
			for _, f := range set {
				if f == "autoSizingReserved" {
					spec["autoSizingReserved"] = true
					continue
				}
				spec["kubeletConfig"].(map[string]any)[f] = adminFields[f]
			}
			rc := dropInContext(true, cpu, adminKC("admin-tuning", "worker", spec),
				adminKC("other-pool", "master", map[string]any{"kubeletConfig": map[string]any{"maxPods": int64(100)}}))
			ev, cat, _ := setup(t, nil)
			a, _ := cat.Get("kubelet-dropin-worker")
			d := ev.Evaluate(context.Background(), a, rc, nil)
			where := fmt.Sprintf("cpu=%v admin sets %v", cpu, set)
			if d.Verdict != engine.VerdictIncluded {
				t.Errorf("%s: %s %s", where, d.Verdict, d.Reason)
				continue
			}
			got := settingsOf(t, d.Desired)
			reported := map[string]bool{}
			for _, df := range d.Deferred {
				f := strings.TrimPrefix(df.Field, "kubelet ")
				reported[f] = true
				if df.Owner != engine.OwnerKubeletConfig || !slices.Equal(df.Managers, []string{"KubeletConfig.machineconfiguration.openshift.io/admin-tuning"}) {
					t.Errorf("%s: %s left to %v (%s), want KubeletConfig/admin-tuning alone", where, f, df.Managers, df.Owner)
				}
			}
			for f := range full[cpu] {
				_, kept := got[f]
				switch {
				case slices.Contains(set, f) && kept:
					t.Errorf("%s: the drop-in sets %s, which the admin's KubeletConfig sets", where, f)
				case !kept && !reported[f]:
					t.Errorf("%s: %s left out without a report", where, f)
				case !kept && !slices.Contains(set, f) && !coupledWithHeld(f, set, full[cpu]):
					t.Errorf("%s: %s left out, though nothing the admin sets needs it", where, f)
				}
			}
			for _, g := range kubeletdropin.Coupled {
				if _, anchored := full[cpu][g.Anchor]; !anchored {
					continue
				}
				var kept, ours []string
				for _, m := range g.Members {
					if _, ok := full[cpu][m]; ok {
						ours = append(ours, m)
						if _, ok := got[m]; ok {
							kept = append(kept, m)
						}
					}
				}
				if len(kept) != 0 && len(kept) != len(ours) {
					t.Errorf("%s: keeps %v of the group %v (%s)", where, kept, ours, g.Why)
				}
			}
			spec2, err := kubeletdropin.Settings(d.Desired)
			if err != nil {
				t.Fatal(err)
			}
			if err := reservation.Check(spec2); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			if len(d.Deferred) > 0 {
				leftSomething++
			}
		}
	}
	if leftSomething < 100 {
		t.Fatalf("only %d cases left a setting out: the generator lost its admins", leftSomething)
	}
}

// coupledWithHeld: f is in a group whose anchor the drop-in sets and of
// which the admin holds a member.
func coupledWithHeld(f string, held []string, ours map[string]any) bool {
	for _, g := range kubeletdropin.Coupled {
		if _, ok := ours[g.Anchor]; !ok || !slices.Contains(g.Members, f) {
			continue
		}
		for _, h := range held {
			if slices.Contains(g.Members, h) || slices.Contains(g.Triggers, h) {
				return true
			}
		}
	}
	return false
}

// settingsOf names what a drop-in MachineConfig sets: its drop-ins'
// fields, and autoSizingReserved and systemReserved while it ships the
// sizing file.
func settingsOf(t *testing.T, mc *unstructured.Unstructured) map[string]any {
	t.Helper()
	dropIns, sizing, err := kubeletdropin.Files(mc)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := kubeletdropin.Settings(mc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range spec["kubeletConfig"].(map[string]any) {
		out[k] = v
	}
	if sizing != nil {
		out["autoSizingReserved"], out["systemReserved"] = true, true
	}
	if len(dropIns) == 0 {
		t.Fatal("no drop-in")
	}
	return out
}

// ourKubeletConfig is the autopilot's KubeletConfig for the worker pool as an
// earlier pass applied it.
func ourKubeletConfig(ann map[string]string) *unstructured.Unstructured {
	u := adminKC("kubevirt-kubelet-worker", "worker", map[string]any{"autoSizingReserved": true, "kubeletConfig": map[string]any{"maxPods": int64(500)}})
	u.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
	a := map[string]string{annotations.Asset: "kubelet-worker"}
	for k, v := range ann {
		a[k] = v
	}
	u.SetAnnotations(a)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: annotations.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "machineconfiguration.openshift.io/v1"}})
	return u
}

// Once the worker kubelet reads drop-ins, the drop-in replaces the
// autopilot's KubeletConfig in one write: its decision carries the
// KubeletConfig to delete and the pools of both; the KubeletConfig is
// never taken for an admin's (nothing is deferred to it). A KubeletConfig a
// person tailored or the HCO protects holds the drop-in instead.
func TestDropInReplacesTheKubeletConfig(t *testing.T) {
	for _, c := range []struct {
		name    string
		ann     map[string]string
		hco     map[string]string
		want    engine.Verdict
		replace bool
	}{
		{"plain", nil, nil, engine.VerdictIncluded, true},
		{"patched", map[string]string{annotations.Patch: `[{"op":"replace","path":"/spec/kubeletConfig/maxPods","value":300}]`}, nil, engine.VerdictConflict, false},
		{"ignore-fields", map[string]string{annotations.IgnoreFields: "/spec/kubeletConfig/maxPods"}, nil, engine.VerdictConflict, false},
		{"unmanaged", map[string]string{annotations.Mode: annotations.ModeUnmanaged}, nil, engine.VerdictConflict, false},
		{"adopted", map[string]string{annotations.Adopted: "true"}, nil, engine.VerdictConflict, false},
		{"excluded", nil, map[string]string{annotations.DisabledResources: "KubeletConfig/kubevirt-kubelet-worker"}, engine.VerdictConflict, false},
		// The activation switch: report-only previews the pair; a switch
		// leaving the KubeletConfig's asset out holds the drop-in too.
		{"report-only", nil, map[string]string{annotations.Autopilot: "report-only"}, engine.VerdictIncluded, true},
		{"only the drop-in active", nil, map[string]string{annotations.Autopilot: "kubelet-dropin-worker"}, engine.VerdictPaused, false},
	} {
		kc := ourKubeletConfig(c.ann)
		rc := dropInContext(true, false, kc)
		if c.hco != nil {
			hco := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "kubevirt-hyperconverged"}}}
			hco.SetAnnotations(c.hco)
			rc = rc.WithHCO(hco)
		}
		ds := decisions(t, rc, liveMap{"KubeletConfig//kubevirt-kubelet-worker": kc})
		di, old := ds["kubelet-dropin-worker"], ds["kubelet-worker"]
		if di.Verdict != c.want || (di.Replaces != nil) != c.replace {
			t.Errorf("%s: drop-in %s (%s), replaces %v", c.name, di.Verdict, di.Reason, di.Replaces != nil)
			continue
		}
		if len(di.Deferred) > 0 {
			t.Errorf("%s: settings deferred to the autopilot's own KubeletConfig: %v", c.name, di.Deferred)
		}
		if c.replace {
			if old.ReplacedBy != "kubelet-dropin-worker" || old.Verdict != engine.VerdictInactive {
				t.Errorf("%s: the KubeletConfig's decision: %s replaced by %q", c.name, old.Verdict, old.ReplacedBy)
			}
			if !slices.Contains(di.Pools, "worker") || engine.DisruptionOf(&di).Reboot != true {
				t.Errorf("%s: the pair's disruption %v", c.name, engine.DisruptionOf(&di))
			}
		} else if !strings.Contains(di.Reason+di.Waits, "kubelet-worker") {
			t.Errorf("%s: the conflict does not name the KubeletConfig: %s", c.name, di.Reason)
		}
		if di.Waits != "" {
			t.Errorf("%s: the drop-in's write waits: %q", c.name, di.Waits)
		}
	}
}

// A KubeletConfig already being deleted (MCO's finalizer keeps it until its
// generated MachineConfig is gone) is gone: nothing to pair, no Conflict,
// nothing deferred to it. Any other labelled KubeletConfig (an old release's,
// kept by a tombstone's guard) is applied by MCO and holds its settings.
func TestDropInBesideGoingAndKeptKubeletConfigs(t *testing.T) {
	going := ourKubeletConfig(nil)
	now := metav1.Now()
	going.SetDeletionTimestamp(&now)
	going.SetFinalizers([]string{"99-worker-generated-kubelet"})
	ds := decisions(t, dropInContext(true, false, going), liveMap{"KubeletConfig//kubevirt-kubelet-worker": going})
	di := ds["kubelet-dropin-worker"]
	if di.Verdict != engine.VerdictIncluded || di.Replaces != nil || len(di.Deferred) > 0 {
		t.Errorf("beside a KubeletConfig being deleted: %s (%s), replaces %v, deferred %v", di.Verdict, di.Reason, di.Replaces != nil, di.Deferred)
	}

	kept := adminKC("kubevirt-worker-performance", "worker", map[string]any{"kubeletConfig": map[string]any{"maxPods": int64(300)}})
	kept.SetLabels(map[string]string{annotations.ManagedByLabel: annotations.ManagedByValue})
	kept.SetAnnotations(map[string]string{annotations.Asset: "kubelet-performance-worker", annotations.Patch: "[]"})
	ds = decisions(t, dropInContext(true, false, kept), nil)
	di = ds["kubelet-dropin-worker"]
	if di.Verdict != engine.VerdictIncluded || len(di.Deferred) != 1 || di.Deferred[0].String() != "kubelet maxPods (KubeletConfig.machineconfiguration.openshift.io/kubevirt-worker-performance)" {
		t.Errorf("beside an old KubeletConfig of the autopilot's that is kept: %s (%s), deferred %v", di.Verdict, di.Reason, di.Deferred)
	}
}

// While the KubeletConfig's asset cannot be judged (backing off after a
// failure), the drop-in's write waits for it: the walk names the
// dependency, the gate holds the write (MissingDependency, as every
// preview shows it), and nothing of the pair goes.
func TestDropInWaitsForAKubeletConfigAssetInBackoff(t *testing.T) {
	kc := ourKubeletConfig(nil)
	rc := dropInContext(true, false, kc)
	ev, cat, _ := setup(t, nil)
	ev.Hold = func(a *catalog.Asset) (string, bool) {
		return "retrying in 4s: apply refused", a.Name == "kubelet-worker"
	}
	eval := ev.Preview(context.Background(), cat, rc, liveMap{"KubeletConfig//kubevirt-kubelet-worker": kc})
	var di engine.Decision
	for _, d := range eval.Decisions {
		if d.Asset.Name == "kubelet-dropin-worker" {
			di = d
		}
	}
	if di.Verdict != engine.VerdictIncluded || di.Replaces != nil || !strings.Contains(di.Waits, "kubelet-worker") || !strings.Contains(di.Waits, "retrying in 4s") {
		t.Fatalf("the drop-in: %s, replaces %v, waits %q", di.Verdict, di.Replaces != nil, di.Waits)
	}
	gate.Preview(cat, eval, time.Now())
	for _, d := range eval.Decisions {
		if d.Asset.Name == "kubelet-dropin-worker" && (d.Verdict != engine.VerdictMissingDependency || d.Desired != nil) {
			t.Fatalf("the previews show the hold: %s (%s)", d.Verdict, d.Reason)
		}
	}
}
