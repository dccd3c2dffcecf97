// Package debug serves the autopilot's debug endpoints on a loopback
// address: what it would render now and why, what it excludes, its
// tombstones and its health. Read-only; Secret data is never shown.
package debug

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/redact"
	"github.com/kubevirt/virt-platform-autopilot/pkg/report"
	"github.com/kubevirt/virt-platform-autopilot/pkg/throttle"
)

// CheckLoopback refuses an address that is not on a loopback interface:
// the endpoints have no authentication.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("debug address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("debug address %q is not a loopback address: the debug endpoints are unauthenticated; use 127.0.0.1 (and kubectl port-forward), or pass --debug-allow-remote to force it", addr)
}

// Source is what the endpoints read: an evaluation now, from the caches,
// and what the controller last recorded. The controller's Reconciler is
// one; it never writes on behalf of an endpoint.
type Source interface {
	// Preview evaluates every asset without writing: what the next
	// reconcile would decide, and the HCO inputs it would report.
	Preview(ctx context.Context) (engine.Evaluation, []engine.Notice, error)
	// Snapshot is what the controller last recorded, and its health.
	Snapshot() report.Snapshot
}

// Server is a manager Runnable serving the endpoints.
type Server struct {
	Addr    string
	Catalog *catalog.Catalog
	Source  Source
}

// NeedLeaderElection is false: every replica can answer.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	srv := &http.Server{Addr: s.Addr, Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// pages are the endpoints, each with what it answers: the routes and
// the index at /debug/ come from this one list.
var pages = []struct {
	path, what string
	handler    func(*Server) http.HandlerFunc
}{
	{"/debug/health", "the reconcile's health, the admission policy, the TLS profile", func(s *Server) http.HandlerFunc { return s.health }},
	{"/debug/render", "each asset: its desired object, what a reconcile would decide now, the last outcome (?show-excluded=true: every asset)", func(s *Server) http.HandlerFunc { return s.render }},
	{"/debug/render/{asset}", "one asset, as above", func(s *Server) http.HandlerFunc { return s.render }},
	{"/debug/features", "each feature: its switch, state and assets", func(s *Server) http.HandlerFunc { return s.features }},
	{"/debug/exclusions", "the HCO's disabled-resources as understood, and what each entry matches", func(s *Server) http.HandlerFunc { return s.exclusions }},
	{"/debug/inputs", "the HCO's inputs not acted on, and why", func(s *Server) http.HandlerFunc { return s.inputs }},
	{"/debug/tombstones", "the objects earlier releases created, and what became of each", func(s *Server) http.HandlerFunc { return s.tombstones }},
}

// Handler routes the endpoints; /debug/ lists them.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range pages {
		mux.HandleFunc("GET "+p.path, p.handler(s))
	}
	mux.HandleFunc("GET /debug/{$}", index)
	return mux
}

// index lists the pages, one per line: a person who finds the port finds
// the rest.
func index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, p := range pages {
		fmt.Fprintf(w, "%-24s %s\n", p.path, p.what)
	}
}

// AssetView is one asset in /debug/render.
type AssetView struct {
	Asset string `json:"asset"`
	// Now is what a reconcile would decide now, from the caches.
	Status  string         `json:"status"`
	Reason  string         `json:"reason,omitempty"`
	Object  string         `json:"object,omitempty"`
	Desired map[string]any `json:"desired,omitempty"`
	// Last is what the controller last did.
	Last *LastView `json:"last,omitempty"`
}

// LastView is the controller's last outcome for an asset.
type LastView struct {
	Outcome   engine.Outcome  `json:"outcome"`
	Reason    string          `json:"reason,omitempty"`
	Since     time.Time       `json:"since"`
	Drift     []string        `json:"drift,omitempty"`
	Opponents []string        `json:"opponents,omitempty"`
	Throttle  *throttle.State `json:"throttle,omitempty"`
}

func (s *Server) render(w http.ResponseWriter, r *http.Request) {
	eval, _, err := s.Source.Preview(r.Context())
	if err != nil {
		http.Error(w, "evaluate: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ds, last := eval.Decisions, s.Source.Snapshot()
	want := r.PathValue("asset")
	all := want != "" || r.URL.Query().Get("show-excluded") == "true"
	var out []AssetView
	for i := range ds {
		d := &ds[i]
		if want != "" && d.Asset.Name != want {
			continue
		}
		if !all && d.Verdict != engine.VerdictIncluded {
			continue
		}
		out = append(out, view(d, last))
	}
	if want != "" {
		if len(out) == 0 {
			http.Error(w, fmt.Sprintf("no asset %q", want), http.StatusNotFound)
			return
		}
		write(w, r, out[0])
		return
	}
	write(w, r, out)
}

// features answers what render --output features prints, from the caches.
func (s *Server) features(w http.ResponseWriter, r *http.Request) {
	eval, _, err := s.Source.Preview(r.Context())
	if err != nil {
		http.Error(w, "evaluate: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	write(w, r, features.Of(s.Catalog, eval.Context, eval.Decisions, s.Source.Snapshot().Last))
}

func view(d *engine.Decision, last report.Snapshot) AssetView {
	v := AssetView{Asset: d.Asset.Name, Status: preview.Status(d.Verdict), Reason: d.Reason}
	if t := d.Target(); t != nil {
		v.Object = engine.ObjectKey(t)
	}
	if d.Desired != nil {
		v.Desired = redact.Object(d.Desired).Object
	}
	if st, ok := last.Asset(d.Asset.Name); ok {
		v.Last = &LastView{Outcome: st.Outcome, Reason: st.Reason, Since: st.Changed, Drift: st.Drift, Opponents: st.Opponents}
		if t, ok := last.Throttle[st.Object]; ok {
			v.Last.Throttle = &t
		}
	}
	return v
}

func (s *Server) exclusions(w http.ResponseWriter, r *http.Request) {
	eval, _, err := s.Source.Preview(r.Context())
	if err != nil {
		http.Error(w, "evaluate: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	ds, rc := eval.Decisions, eval.Context
	type excluded struct {
		Asset  string `json:"asset"`
		Status string `json:"status"`
		Object string `json:"object,omitempty"`
		Reason string `json:"reason"`
	}
	out := struct {
		Rules     []string   `json:"disabledResources"`
		Malformed []string   `json:"malformedEntries,omitempty"`
		Assets    []excluded `json:"assets"`
	}{Rules: []string{}, Assets: []excluded{}}
	for _, rule := range rc.Exclusions.Rules {
		out.Rules = append(out.Rules, rule.String())
	}
	for _, e := range rc.ExclusionErrors {
		out.Malformed = append(out.Malformed, e.Error())
	}
	for i := range ds {
		d := &ds[i]
		if d.Verdict == engine.VerdictIncluded {
			continue
		}
		e := excluded{Asset: d.Asset.Name, Status: preview.Status(d.Verdict), Reason: d.Reason}
		if t := d.Target(); t != nil {
			e.Object = engine.ObjectKey(t)
		}
		out.Assets = append(out.Assets, e)
	}
	write(w, r, out)
}

// inputs lists every HCO input the autopilot does not act on as written
// (the same notices the controller reports as Events and the CLI on stderr).
func (s *Server) inputs(w http.ResponseWriter, r *http.Request) {
	_, notices, err := s.Source.Preview(r.Context())
	if err != nil {
		http.Error(w, "evaluate: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	out := notices
	if out == nil {
		out = []engine.Notice{}
	}
	write(w, r, out)
}

func (s *Server) tombstones(w http.ResponseWriter, r *http.Request) {
	type view struct {
		Object  string `json:"object"`
		Release string `json:"release"`
		Path    string `json:"path"`
		Status  string `json:"status,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}
	out := []view{}
	for _, t := range s.Source.Snapshot().Tombstones {
		out = append(out, view{Object: t.Tombstone.Key(), Release: t.Tombstone.Release, Path: t.Tombstone.Path, Status: string(t.Status), Reason: t.Reason})
	}
	write(w, r, out)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	write(w, r, struct {
		Status string `json:"status"`
		report.Health
	}{Status: "ok", Health: s.Source.Snapshot().Health})
}

// write answers YAML by default, JSON with ?format=json.
func write(w http.ResponseWriter, r *http.Request, v any) {
	if strings.EqualFold(r.URL.Query().Get("format"), "json") {
		w.Header().Set("Content-Type", "application/json")
		_ = preview.WriteJSON(w, v)
		return
	}
	y, err := yaml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(y)
}
