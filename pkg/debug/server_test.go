package debug

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8081": true, "localhost:8081": true, "[::1]:8081": true,
		":8081": false, "0.0.0.0:8081": false, "10.0.0.5:8081": false, "8081": false,
	} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// fakeSource stands in for the controller: the endpoints depend only on
// an evaluation and a snapshot.
type fakeSource struct {
	eval    engine.Evaluation
	notices []engine.Notice
	snap    report.Snapshot
}

func (f fakeSource) Preview(context.Context) (engine.Evaluation, []engine.Notice, error) {
	return f.eval, f.notices, nil
}
func (f fakeSource) Snapshot() report.Snapshot { return f.snap }

func get(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
	if rr.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rr.Code, rr.Body.String())
	}
	return rr.Body.String()
}

// Every endpoint answers from the source alone: the evaluation's verdicts,
// the controller's last outcomes beside them (a held write makes its
// feature waiting), notices, tombstones and health; Secret data never.
func TestEndpointsReadTheSource(t *testing.T) {
	cat, err := catalog.Parse(nil, []byte(`
features:
  - {name: f, description: d, maturity: ga}
assets:
  - {name: s, feature: f, path: x, component: X, tier: 1, reconcile_order: 1, install: always, disruption: none}
  - {name: mc, feature: f, path: y, component: X, tier: 1, reconcile_order: 2, install: always, disruption: none}
`))
	if err != nil {
		t.Fatal(err)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "ns", "name": "creds"}, "data": map[string]any{"password": "c2VjcmV0"}}}
	s, _ := cat.Get("s")
	mc, _ := cat.Get("mc")
	src := fakeSource{
		eval: engine.Evaluation{Context: rendercontext.New(rendercontext.Facts{}), Decisions: []engine.Decision{
			{Asset: s, Verdict: engine.VerdictIncluded, Rendered: secret, Desired: secret},
			{Asset: mc, Verdict: engine.VerdictIncluded},
		}},
		notices: []engine.Notice{{Annotation: "platform.kubevirt.io/enable-x", Reason: engine.Malformed, Event: "InvalidSwitch", Message: "not a boolean"}},
		snap: report.Snapshot{
			Assets: []report.AssetStatus{
				{Asset: "mc", Outcome: engine.Settling, Reason: "pool worker is updating"},
				{Asset: "s", Outcome: engine.Unchanged, Object: "Secret/ns/creds"},
			},
			Throttle: map[string]throttle.State{"Secret/ns/creds": {}},
			Health:   report.Health{HCOResourceVersion: "42", Watched: []string{"v1, Kind=Secret"}},
		},
	}
	h := (&Server{Catalog: cat, Source: src}).Handler()
	if body := get(t, h, "/debug/render"); strings.Contains(body, "c2VjcmV0") || !strings.Contains(body, "REDACTED") || !strings.Contains(body, "outcome: Unchanged") {
		t.Errorf("/debug/render: Secret data shown or last outcome missing:\n%s", body)
	}
	if body := get(t, h, "/debug/features?format=json"); !strings.Contains(body, `"state": "waiting"`) || !strings.Contains(body, "pool worker is updating") {
		t.Errorf("/debug/features: a held write is not waiting:\n%s", body)
	}
	if body := get(t, h, "/debug/inputs"); !strings.Contains(body, "not a boolean") {
		t.Errorf("/debug/inputs: %s", body)
	}
	if body := get(t, h, "/debug/health"); !strings.Contains(body, `hcoResourceVersion: "42"`) || !strings.Contains(body, "status: ok") {
		t.Errorf("/debug/health: %s", body)
	}
	if body := get(t, h, "/debug/tombstones"); strings.TrimSpace(body) != "[]" {
		t.Errorf("/debug/tombstones: %q", body)
	}
	// The index lists every page, and each page it lists answers.
	index := get(t, h, "/debug/")
	for _, line := range strings.Split(strings.TrimSpace(index), "\n") {
		path := strings.Fields(line)[0]
		if strings.Contains(path, "{") {
			continue
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Errorf("/debug/ lists %s, which answers %d", path, rec.Code)
		}
	}
	for _, p := range []string{"/debug/health", "/debug/render", "/debug/features", "/debug/exclusions", "/debug/inputs", "/debug/tombstones"} {
		if !strings.Contains(index, p+" ") {
			t.Errorf("/debug/ does not list %s:\n%s", p, index)
		}
	}
}
