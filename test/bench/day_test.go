//go:build bench

package bench

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/app"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/nodedisruption"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

var (
	mcGVK = schema.GroupVersionKind{Group: "machineconfiguration.openshift.io", Version: "v1", Kind: "MachineConfig"}
	kcGVK = mcGVK.GroupVersion().WithKind("KubeletConfig")
)

// dayStep is one change of a scripted day, at its own hour: an edit of a
// node object the autopilot then corrects (what an upgrade of the
// autopilot changing its rendering does to the node, or an admin's edit).
type dayStep struct {
	what  string
	gvk   schema.GroupVersionKind
	name  string
	asset string
	edit  func(u *unstructured.Unstructured, round int)
}

func fileEdit(path string) func(*unstructured.Unstructured, int) {
	return func(u *unstructured.Unstructured, round int) {
		files, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "storage", "files")
		for _, f := range files {
			if m := f.(map[string]any); m["path"] == path {
				m["contents"] = map[string]any{"source": fmt.Sprintf("data:,edited-%d", round)}
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, files, "spec", "config", "storage", "files")
	}
}

func unitEdit(name string) func(*unstructured.Unstructured, int) {
	return func(u *unstructured.Unstructured, round int) {
		units, _, _ := unstructured.NestedSlice(u.Object, "spec", "config", "systemd", "units")
		for _, x := range units {
			if m := x.(map[string]any); m["name"] == name {
				m["contents"] = fmt.Sprint(m["contents"], "\n# edited ", round, "\n")
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, units, "spec", "config", "systemd", "units")
	}
}

var day = []dayStep{
	{"06:00 an upgrade changes the VM-shutdown script", mcGVK, "95-worker-kubevirt-vm-shutdown", "vm-drain-shutdown-inhibitor-worker", fileEdit("/usr/local/bin/kubevirt-vm-shutdown")},
	{"09:00 someone edits a kernel argument", mcGVK, psiMC, "psi-enable", func(u *unstructured.Unstructured, _ int) {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"psi=0"}, "spec", "kernelArguments")
	}},
	{"11:00 an upgrade changes the THP script", mcGVK, "90-worker-kubevirt-thp", "thp-tuning-worker", fileEdit("/usr/local/bin/kubevirt-thp-tuning")},
	{"13:00 an upgrade changes the swap unit", mcGVK, "90-worker-kubevirt-swap", "swap-enable", unitEdit("kubevirt-swap-on.service")},
	{"15:00 an upgrade changes a kubelet setting", kcGVK, "kubevirt-kubelet-worker", "kubelet-worker", func(u *unstructured.Unstructured, round int) {
		_ = unstructured.SetNestedField(u.Object, int64(400+round), "spec", "kubeletConfig", "maxPods")
	}},
	{"18:00 a second upgrade changes the VM-shutdown script", mcGVK, "95-worker-kubevirt-vm-shutdown", "vm-drain-shutdown-inhibitor-worker", fileEdit("/usr/local/bin/kubevirt-vm-shutdown")},
}

// scriptedDay runs the day's changes against the real controller four
// ways, with and without a closed disruption window and with and without
// MCO's published node disruption policy, and counts what the nodes go
// through by MCO's rules: a rollout is a pool drained and rebooted once
// (writes of one phase reach MCO together and render into one
// configuration), a restart a write MCO applies without a drain.
func (b *bench) scriptedDay() {
	var shift atomic.Int64
	m := startWith(b.t, b.cfg, app.Config{
		Throttle: throttle.Config{Burst: 100000, Refill: time.Millisecond}, SettlePeriod: -1,
		Now: func() time.Time { return time.Now().Add(time.Duration(shift.Load())) },
	})
	defer m.stop()
	waitFor(b.t, "converge", 60*time.Second, m.converged)
	for _, s := range day {
		b.obj(s.gvk, s.name) // each object exists
	}
	round := 0
	for _, windowed := range []bool{false, true} {
		for _, policy := range []bool{false, true} {
			shift.Store(0)
			b.publishPolicy(policy)
			opens := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute)
			window := ""
			if windowed {
				window = fmt.Sprintf("daily %s-%s UTC", opens.Format("15:04"), opens.Add(time.Hour).Format("15:04"))
			}
			m.reconciledAt(b.t, b.setWindow(window))
			waitFor(b.t, "the policy seen", 10*time.Second, func() bool {
				eval, _, err := m.rec.Preview(b.ctx)
				_, ok := eval.Context.NodeDisruptionPolicy()
				return err == nil && ok == policy
			})
			pol := b.clusterPolicy()
			var rollouts, restarts int
			count := func(phase string, writes map[string]*unstructured.Unstructured, mark int, released bool) {
				drains := 0
				var first, last time.Time
				for _, r := range m.log.since(mark) {
					if r.method == http.MethodGet || r.dryRun {
						continue
					}
					for key, before := range writes {
						if !strings.HasSuffix(r.path, "/"+before.GetName()) || !strings.Contains(r.path, "/"+strings.ToLower(before.GetKind())+"s/") {
							continue
						}
						after := b.obj(before.GroupVersionKind(), before.GetName())
						acts := []nodedisruption.Action{{Type: nodedisruption.Reboot}}
						if before.GetKind() == "MachineConfig" {
							bs, _ := before.Object["spec"].(map[string]any)
							as, _ := after.Object["spec"].(map[string]any)
							acts = pol.Actions(nodedisruption.Diff(bs, as))
						}
						if nodedisruption.Drains(acts) {
							drains++
						} else {
							restarts++
						}
						if first.IsZero() {
							first = r.at
						}
						last = r.at
						delete(writes, key)
					}
				}
				if drains > 0 {
					rollouts++ // one pool (worker) in this phase
				}
				if released && last.Sub(first) > 5*time.Second {
					b.t.Fatalf("%s: the released writes span %s: MCO would roll the pool more than once", phase, last.Sub(first))
				}
			}
			staged := map[string]*unstructured.Unstructured{}
			for _, s := range day {
				round++
				mark := m.log.mark()
				u := b.obj(s.gvk, s.name)
				s.edit(u, round)
				b.must(b.c.Update(b.ctx, u, client.FieldOwner("kubectl-edit")))
				edited := b.obj(s.gvk, s.name)
				waitFor(b.t, s.what+": corrected or staged", 20*time.Second, func() bool {
					st, ok := m.rec.Snapshot().Asset(s.asset)
					return ok && (st.Outcome == engine.Staged || b.obj(s.gvk, s.name).GetGeneration() != edited.GetGeneration())
				})
				if st, _ := m.rec.Snapshot().Asset(s.asset); st.Outcome == engine.Staged {
					staged[s.name] = edited
					continue
				}
				count(s.what, map[string]*unstructured.Unstructured{s.name: edited}, mark, false)
			}
			if len(staged) > 0 {
				// The window opens: every staged write goes at once.
				stagedMark := m.log.mark()
				shift.Store(int64(time.Until(opens) + time.Second))
				m.reconciledAt(b.t, b.poke())
				for name, before := range staged {
					waitFor(b.t, name+" released", 20*time.Second, func() bool {
						return b.obj(before.GroupVersionKind(), name).GetGeneration() != before.GetGeneration()
					})
				}
				count("window opens", staged, stagedMark, true)
			}
			key := fmt.Sprintf("day_%s_%s", map[bool]string{false: "anytime", true: "window"}[windowed], map[bool]string{false: "no_policy", true: "policy"}[policy])
			b.results[key+"_rollouts"] = float64(rollouts)
			b.results[key+"_restarts"] = float64(restarts)
			shift.Store(0)
			m.reconciledAt(b.t, b.setWindow(""))
		}
	}
	b.publishPolicy(false)
}

func (b *bench) obj(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	b.must(b.c.Get(b.ctx, client.ObjectKey{Name: name}, u))
	return u
}

func (b *bench) setWindow(v string) string {
	u := b.hco()
	a := u.GetAnnotations()
	if v == "" {
		delete(a, annotations.DisruptionWindow)
	} else {
		a[annotations.DisruptionWindow] = v
	}
	u.SetAnnotations(a)
	b.must(b.c.Update(b.ctx, u))
	return u.GetResourceVersion()
}

// publishPolicy plays MCO: it publishes the merged policy (the spec's
// entries; MCO's defaults name none of the autopilot's paths) for the
// current generation, or withdraws it.
func (b *bench) publishPolicy(on bool) {
	k := rendercontext.MachineConfigurationKey
	u := b.obj(k.GVK, k.Name)
	if !on {
		unstructured.RemoveNestedField(u.Object, "status", "nodeDisruptionPolicyStatus")
	} else {
		files, _, _ := unstructured.NestedSlice(u.Object, "spec", "nodeDisruptionPolicy", "files")
		b.must(unstructured.SetNestedField(u.Object, map[string]any{"clusterPolicies": map[string]any{"files": files,
			"sshkey": map[string]any{"actions": []any{map[string]any{"type": "None"}}}}}, "status", "nodeDisruptionPolicyStatus"))
		b.must(unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration"))
	}
	b.must(b.c.Status().Update(b.ctx, u))
}

func (b *bench) clusterPolicy() nodedisruption.Policy {
	k := rendercontext.MachineConfigurationKey
	p, _, err := nodedisruption.ClusterPolicy(b.obj(k.GVK, k.Name).Object)
	b.must(err)
	return p
}
