package consoleapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/catalog"
	"github.com/kubevirt/virt-platform-autopilot/pkg/debug"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metricsauth"
	"github.com/kubevirt/virt-platform-autopilot/pkg/preview"
	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
	"github.com/kubevirt/virt-platform-autopilot/pkg/tlsprofile"
)

// OverviewPath is the API's one document; the plugin reads it through the
// console's proxy (ConsolePlugin spec.proxy alias ProxyAlias).
const (
	OverviewPath = "/api/v1/overview"
	// PreviewPath answers what setting ?annotation= to ?value= (absent:
	// removing it) would make the autopilot do.
	PreviewPath = "/api/v1/preview"
	ProxyAlias  = "autopilot"
	// PluginName is the ConsolePlugin's name (console-plugin/package.json).
	PluginName = "virt-platform-autopilot"
	// maxEvaluations bounds the API's evaluations at once.
	maxEvaluations = 2
)

// Server is a manager Runnable serving, over TLS with the cluster's
// profile, the plugin's built files (the console's backend fetches them,
// with no user token) and the API, each request authenticated and
// authorized as the user the console sends: the overview shows the HCO's
// plan, so a user sees it only if they may get the HyperConverged.
type Server struct {
	Addr string
	// CertDir holds tls.crt and tls.key (the service CA's serving
	// certificate); a renewed one is served from the next handshake.
	CertDir string
	// PluginDir holds the built plugin (plugin-manifest.json, the
	// modules); "" serves the API alone.
	PluginDir string
	// Namespace is the HCO's.
	Namespace string
	Catalog   *catalog.Catalog
	Source    Source
	Reviewer  metricsauth.Reviewer
	TLS       *tlsprofile.Served
	Auth      metricsauth.Options
	Log       logr.Logger
	Now       func() time.Time
}

// Source is what the views are made from: the controller's evaluation
// (debug.Source), and its planner's as if the HCO's annotations were
// changed (before the gate: Compare judges).
type Source interface {
	debug.Source
	PoolImpacter
	PlanWith(ctx context.Context, set map[string]*string) (engine.Evaluation, []engine.Notice, error)
}

// NeedLeaderElection is false: every replica answers (the console's
// Service picks any).
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	cw, err := certwatcher.New(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("console plugin server: serving certificate in %s: %w", s.CertDir, err)
	}
	go func() {
		if err := cw.Start(ctx); err != nil {
			s.Log.Error(err, "console plugin server: the serving certificate is no longer watched; a renewed one is not served until restart")
		}
	}()
	cfg := &tls.Config{GetCertificate: cw.GetCertificate, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	if s.TLS != nil {
		s.TLS.TLSOpt()(cfg)
	}
	ln, err := tls.Listen("tcp", s.Addr, cfg)
	if err != nil {
		return fmt.Errorf("console plugin server: listen on %s: %w", s.Addr, err)
	}
	return s.serve(ctx, ln)
}

func (s *Server) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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

// Handler routes the API (authorized) and the plugin's files.
func (s *Server) Handler() http.Handler {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	mux := http.NewServeMux()
	// Evaluations at once, whoever asks: a console of many open tabs (or a
	// reader who loops) waits instead of taking the controller's cores.
	busy := make(chan struct{}, maxEvaluations)
	bounded := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			select {
			case busy <- struct{}{}:
				defer func() { <-busy }()
				h(w, r)
			case <-r.Context().Done():
				http.Error(w, "the request ended while waiting for an evaluation", http.StatusServiceUnavailable)
			}
		}
	}
	overview := bounded(func(w http.ResponseWriter, r *http.Request) {
		eval, notices, err := s.Source.Preview(r.Context())
		if err != nil {
			http.Error(w, "the autopilot cannot evaluate now: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = preview.WriteJSON(w, Build(s.Catalog, eval, notices, s.Source.Snapshot(), now()))
	})
	// One guard, so one cache of verdicts, in front of every API route.
	api := http.NewServeMux()
	api.Handle("GET "+OverviewPath, overview)
	api.Handle("GET "+PreviewPath, bounded(func(w http.ResponseWriter, r *http.Request) { s.preview(w, r, now()) }))
	guarded := metricsauth.Guard(s.Reviewer, time.Now, s.Auth, s.readsHCO, ProxyAlias, s.Log, api)
	mux.Handle("GET /api/", guarded)
	if s.PluginDir != "" {
		files := http.FileServer(http.Dir(s.PluginDir))
		mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The manifest names the current modules; the modules'
			// names carry their content hash.
			if strings.HasSuffix(r.URL.Path, ".json") {
				w.Header().Set("Cache-Control", "no-cache")
			}
			w.Header().Set("X-Content-Type-Options", "nosniff")
			files.ServeHTTP(w, r)
		}))
	}
	return mux
}

// readsHCO: the API shows the HCO's plan, so it asks what reading the
// HCO asks.
func (s *Server) readsHCO(*http.Request) (metricsauth.Attributes, bool) {
	return metricsauth.Attributes{Resource: &authzv1.ResourceAttributes{
		Verb: "get", Group: rendercontext.HCOGVK.Group, Version: rendercontext.HCOGVK.Version, Resource: "hyperconvergeds",
		Namespace: s.Namespace, Name: rendercontext.HCOName,
	}}, true
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request, now time.Time) {
	q := r.URL.Query()
	key := q.Get("annotation")
	if !strings.HasPrefix(key, annotations.SwitchPrefix) || len(key) == len(annotations.SwitchPrefix) {
		http.Error(w, fmt.Sprintf("annotation %q: want one of the autopilot's (%s...)", key, annotations.SwitchPrefix), http.StatusBadRequest)
		return
	}
	p := Preview{Annotation: key}
	if q.Has("value") {
		v := q.Get("value")
		p.Value = &v
	}
	before, _, err := s.Source.PlanWith(r.Context(), nil)
	if err != nil {
		http.Error(w, "the autopilot cannot evaluate now: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	after, notices, err := s.Source.PlanWith(r.Context(), map[string]*string{key: p.Value})
	if err != nil {
		http.Error(w, "the autopilot cannot evaluate now: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.Changes = Compare(s.Catalog, before, after, now)
	p.Pools = Impacts(r.Context(), s.Source, after, p.Changes)
	p.Notices = notices
	if p.Notices == nil {
		p.Notices = []engine.Notice{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = preview.WriteJSON(w, p)
}
