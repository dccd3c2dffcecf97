package consoleapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/gate"
	"github.com/kubevirt/virt-platform-autopilot/pkg/impact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metricsauth"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
)

// testCatalog: a feature whose MachineConfig reboots its pool, behind a
// switch, and one always on.
func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Parse(nil, []byte(`
features:
  - {name: f, description: d, maturity: tech-preview, switch: enable-f}
  - {name: g, description: d, maturity: ga}
assets:
  - {name: f1, feature: f, path: x, component: MachineConfig, tier: 3, reconcile_order: 1, install: opt-in, disruption: reboot,
     conditions: [{type: annotation, key: platform.kubevirt.io/enable-f, value: "true"}]}
  - {name: g1, feature: g, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func hcoWith(ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace("openshift-cnv")
	u.SetName(rendercontext.HCOName)
	u.SetAnnotations(ann)
	return u
}

func pool(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetName(name)
	return u
}

// The pools say which writes wait and why (the gate's check), when a
// staged one goes (the window's next opening), and the rollouts sent,
// newest first; the HCO's own annotations alone leave the process.
func TestBuild(t *testing.T) {
	cat := testCatalog(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // a Friday
	rc := rendercontext.New(rendercontext.Facts{
		HCO: hcoWith(map[string]string{
			"platform.kubevirt.io/enable-f":           "true",
			"platform.kubevirt.io/disruption-window":  "Sat 02:00-06:00 UTC",
			"kubectl.kubernetes.io/last-applied":      "{secret-ish}",
			"platform.kubevirt.io/disabled-resources": "ConfigMap/x",
		}),
		Observed: rendercontext.Observed{Pools: []*unstructured.Unstructured{pool("worker"), pool("master")}},
	})
	f1, _ := cat.Get("f1")
	g1, _ := cat.Get("g1")
	eval := engine.Evaluation{Context: rc, Decisions: []engine.Decision{
		{Asset: f1, Verdict: engine.VerdictIncluded, Customizations: []string{"patch"}},
		{Asset: g1, Verdict: engine.VerdictIncluded},
	}}
	worker := &engine.Disruption{Reboot: true, Pool: "worker"}
	snap := report.Snapshot{
		Assets: []report.AssetStatus{
			{Asset: "f1", Outcome: engine.Staged, Reason: "staged", HeldBy: "window", Object: "MachineConfig/50-f", Disruption: worker, Opponents: []string{"kubectl-edit"},
				Impact:      "2 node(s) (n1, n2), 3 VMI(s) live-migrate; 1 block the drain: secret-ns/vm-a: no live migration",
				ImpactPools: []impact.Pool{{Pool: "worker", Nodes: []string{"n1", "n2"}, Migrate: 3, Blocking: []string{"secret-ns/vm-a: no live migration"}}}},
			// Paused, report-only, kept by the deletion guard: each waits
			// for a person, not for the pool.
			{Asset: "g1", Outcome: engine.Paused, Disruption: worker},
			{Asset: "g2", Outcome: engine.Drifted, HeldBy: gate.ReportOnly, Disruption: worker},
			{Asset: "g3", Outcome: engine.Retained, HeldBy: gate.Intent, Disruption: worker},
		},
		Rolled: []report.Rollout{
			{Object: "MachineConfig/old", Disruption: *worker, What: "created", At: now.Add(-2 * time.Hour)},
			{Object: "MachineConfig/new", Disruption: *worker, What: "corrected", At: now.Add(-time.Hour)},
		},
	}
	o := Build(cat, eval, nil, snap, now)

	if o.Autopilot.Mode != "managed" || o.Autopilot.Window.Open || !o.Autopilot.Window.NextOpen.Equal(time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("autopilot %+v: managed, the window closed until Saturday 02:00", o.Autopilot)
	}
	if _, leaked := o.HCO.Annotations["kubectl.kubernetes.io/last-applied"]; leaked || len(o.HCO.Annotations) != 3 {
		t.Errorf("HCO annotations %v: only the autopilot's", o.HCO.Annotations)
	}
	if len(o.Pools) != 2 || o.Pools[0].Name != "master" || o.Pools[1].Name != "worker" {
		t.Fatalf("pools %+v", o.Pools)
	}
	w := o.Pools[1]
	if len(w.Waiting) != 1 || w.Waiting[0].HeldBy != "window" || w.Waiting[0].Feature != "f" || !w.Waiting[0].Goes.Equal(o.Autopilot.Window.NextOpen) ||
		w.Waiting[0].Impact != "2 node(s) drained in turn, 3 VMI(s) live-migrate; 1 block the drain" {
		t.Errorf("worker waiting %+v", w.Waiting)
	}
	// Nodes and VMs are counted, never named.
	js, _ := json.Marshal(o)
	for _, name := range []string{"secret-ns", "vm-a", "n1"} {
		if strings.Contains(string(js), name) {
			t.Errorf("the overview names %q", name)
		}
	}
	if !o.Standby {
		t.Error("a snapshot with no reconcile is a standby's")
	}
	if len(w.Rolled) != 2 || w.Rolled[0].Object != "MachineConfig/new" {
		t.Errorf("worker rolled %+v: newest first", w.Rolled)
	}
	if len(o.Pools[0].Waiting)+len(o.Pools[0].Rolled) != 0 {
		t.Errorf("master %+v: nothing of the worker's", o.Pools[0])
	}
	if len(o.Features) != 2 || !o.Features[0].SwitchOn || o.Features[0].SwitchValue != "true" {
		t.Fatalf("features %+v", o.Features)
	}
	obj := o.Features[0].Objects[0]
	if obj.Name != "f1" || len(obj.Customizations) != 1 || len(obj.Opponents) != 1 {
		t.Errorf("f1 %+v: its patch and its opponent", obj)
	}
}

// Every mode the activation switch reads, and a window not understood
// holds (never "open").
func TestBuildModesAndWindow(t *testing.T) {
	cat := testCatalog(t)
	for _, c := range []struct {
		ann        map[string]string
		mode       string
		open       bool
		windowErr  bool
		switchOn   bool
		switchErr  bool
		annotation bool
	}{
		{ann: nil, mode: "managed", open: true},
		{ann: map[string]string{"platform.kubevirt.io/autopilot": "false"}, mode: "paused", open: true, annotation: true},
		{ann: map[string]string{"platform.kubevirt.io/autopilot": "report-only"}, mode: "report-only", open: true, annotation: true},
		{ann: map[string]string{"platform.kubevirt.io/autopilot": "f1"}, mode: "list", open: true, annotation: true},
		{ann: map[string]string{"platform.kubevirt.io/disruption-window": "someday"}, mode: "managed", windowErr: true, annotation: true},
		{ann: map[string]string{"platform.kubevirt.io/enable-f": "yes please"}, mode: "managed", open: true, switchErr: true, annotation: true},
	} {
		rc := rendercontext.New(rendercontext.Facts{HCO: hcoWith(c.ann)})
		o := Build(cat, engine.Evaluation{Context: rc}, nil, report.Snapshot{}, time.Now())
		a := o.Autopilot
		if a.Mode != c.mode || a.Window.Open != c.open || (a.Window.Error != "") != c.windowErr {
			t.Errorf("%v: %+v", c.ann, a)
		}
		if (o.HCO.Annotations == nil) == c.annotation {
			t.Errorf("%v: annotations %v (nil only when the HCO has none)", c.ann, o.HCO.Annotations)
		}
		if f := o.Features[0]; f.SwitchOn != c.switchOn || (f.SwitchError != "") != c.switchErr {
			t.Errorf("%v: switch on=%v err=%q", c.ann, f.SwitchOn, f.SwitchError)
		}
	}
}

// What a change would send, judged by the gate: a write that goes and one
// the window holds; nothing for an object already as desired; a
// correction of metadata alone rolls nothing; an HCO input not understood
// holds a write that reboots; a report-only write was never sent, so
// leaving report-only sends it.
func TestCompare(t *testing.T) {
	cat := testCatalog(t)
	f1, _ := cat.Get("f1")
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	mc := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"kernelArguments": []any{"x=y"}}}}
		u.SetAPIVersion("machineconfiguration.openshift.io/v1")
		u.SetKind("MachineConfig")
		u.SetName("50-f")
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker"})
		for _, m := range mutate {
			m(u)
		}
		return u
	}
	eval := func(ann map[string]string, ds ...engine.Decision) engine.Evaluation {
		return engine.Evaluation{Context: rendercontext.New(rendercontext.Facts{HCO: hcoWith(ann)}), Decisions: ds}
	}
	off := engine.Decision{Asset: f1, Verdict: engine.VerdictInactive}
	on := func(live *unstructured.Unstructured) engine.Decision {
		return engine.Decision{Asset: f1, Verdict: engine.VerdictIncluded, Desired: mc(), Rendered: mc(), Live: live}
	}
	const sw, window, disabled = "platform.kubevirt.io/enable-f", "platform.kubevirt.io/disruption-window", "platform.kubevirt.io/disabled-resources"
	labelled := mc(func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"machineconfiguration.openshift.io/role": "worker", "x": "y"})
	})
	labelled.Object["spec"] = map[string]any{"kernelArguments": []any{"x=y"}}
	reportOnly := on(nil)
	reportOnly.ReportOnly = true
	for _, c := range []struct {
		name          string
		before, after engine.Evaluation
		want          []string // action, goes/held-by, reboot
	}{
		{"turned on, no window", eval(nil, off), eval(map[string]string{sw: "true"}, on(nil)), []string{"create go reboot"}},
		{"turned on, window closed", eval(map[string]string{window: "Sat 02:00-06:00 UTC"}, off),
			eval(map[string]string{sw: "true", window: "Sat 02:00-06:00 UTC"}, on(nil)), []string{"create window reboot"}},
		{"already as desired", eval(nil, off), eval(map[string]string{sw: "true"}, on(mc())), nil},
		{"drifted spec", eval(nil, off), eval(map[string]string{sw: "true"}, on(mc(func(u *unstructured.Unstructured) {
			u.Object["spec"] = map[string]any{"kernelArguments": []any{"x=z"}}
		}))), []string{"update go reboot"}},
		{"a label it does not set is no drift", eval(nil, off), eval(map[string]string{sw: "true"}, on(labelled)), nil},
		{"an entry not understood holds it", eval(map[string]string{disabled: "MachineConfig/[x"}, off),
			eval(map[string]string{sw: "true", disabled: "MachineConfig/[x"}, on(nil)), []string{"create input reboot"}},
		{"the same write before and after", eval(nil, on(nil)), eval(map[string]string{window: ""}, on(nil)), nil},
		{"leaving report-only", eval(nil, reportOnly), eval(nil, on(nil)), []string{"create go reboot"}},
		{"entering report-only", eval(nil, on(nil)), eval(nil, reportOnly), nil},
	} {
		var got []string
		for _, ch := range Compare(cat, c.before, c.after, now) {
			held := "go"
			if !ch.Goes {
				held = ch.HeldBy
			}
			reboot := "none"
			if ch.Disruption.Reboot {
				reboot = "reboot"
			}
			got = append(got, ch.Action+" "+held+" "+reboot)
		}
		if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// fakeSource stands in for the controller.
type fakeSource struct{ eval engine.Evaluation }

func (f fakeSource) Preview(context.Context) (engine.Evaluation, []engine.Notice, error) {
	return f.eval, nil, nil
}
func (f fakeSource) PlanWith(context.Context, map[string]*string) (engine.Evaluation, []engine.Notice, error) {
	return f.eval, nil, nil
}
func (f fakeSource) Snapshot() report.Snapshot { return report.Snapshot{} }
func (f fakeSource) PoolImpacts(context.Context, *rendercontext.RenderContext, []string) []impact.Pool {
	return nil
}

// reviewer knows tokens and who may get the HCO; it records what it was
// asked.
type reviewer struct{ asked []metricsauth.Attributes }

func (r *reviewer) Authenticate(_ context.Context, token string) (authnv1.UserInfo, bool, error) {
	switch token {
	case "reader", "stranger":
		return authnv1.UserInfo{Username: token}, true, nil
	}
	return authnv1.UserInfo{}, false, nil
}

func (r *reviewer) Authorize(_ context.Context, u authnv1.UserInfo, a metricsauth.Attributes) (bool, error) {
	r.asked = append(r.asked, a)
	return u.Username == "reader", nil
}

// The API answers a user who may get the HCO, nobody else; the plugin's
// files need no token (the console's backend fetches them).
func TestServerAuthorizesAsReadingTheHCO(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plugin-manifest.json"), []byte(`{"name":"virt-platform-autopilot"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rev := &reviewer{}
	s := &Server{Namespace: "openshift-cnv", Catalog: testCatalog(t), PluginDir: dir, Reviewer: rev, Log: logr.Discard(),
		Source: fakeSource{eval: engine.Evaluation{Context: rendercontext.New(rendercontext.Facts{HCO: hcoWith(nil)})}}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, resp.Header.Get("Content-Type"))
		return resp.StatusCode, b.String()
	}
	for _, path := range []string{OverviewPath, PreviewPath + "?annotation=platform.kubevirt.io/enable-f&value=true"} {
		for token, want := range map[string]int{"": 401, "unknown": 401, "stranger": 403, "reader": 200} {
			if code, _ := get(path, token); code != want {
				t.Errorf("%s as %q: %d, want %d", path, token, code, want)
			}
		}
	}
	if code, _ := get(PreviewPath+"?annotation=kubectl.kubernetes.io/x&value=1", "reader"); code != http.StatusBadRequest {
		t.Errorf("a preview of an annotation not the autopilot's: %d", code)
	}
	for _, a := range rev.asked {
		r := a.Resource
		if r == nil || a.NonResource != nil || r.Verb != "get" || r.Group != "hco.kubevirt.io" || r.Resource != "hyperconvergeds" || r.Namespace != "openshift-cnv" || r.Name != rendercontext.HCOName {
			t.Errorf("asked %+v: want get of the HCO", a)
		}
	}
	if code, ct := get("/plugin-manifest.json", ""); code != 200 || !strings.HasPrefix(ct, "application/json") {
		t.Errorf("plugin manifest: %d %s", code, ct)
	}
	if code, _ := get("/../../etc/passwd", ""); code == 200 {
		t.Error("a path outside the plugin's folder is served")
	}

	var o Overview
	req, _ := http.NewRequest(http.MethodGet, srv.URL+OverviewPath, nil)
	req.Header.Set("Authorization", "Bearer reader")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || o.HCO.Name != rendercontext.HCOName || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("overview %v %+v %q", err, o.HCO, resp.Header.Get("Cache-Control"))
	}
}
