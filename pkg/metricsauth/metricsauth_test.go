package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeReviewer knows tokens and grants; queued errors are returned first.
type fakeReviewer struct {
	mu         sync.Mutex
	users      map[string]string // token → user
	allowed    map[string]bool   // user → may GET /metrics
	authnErrs  []error
	authzErrs  []error
	authnCalls map[string]int // by token
	authzCalls int
}

func newFake() *fakeReviewer {
	return &fakeReviewer{
		users:      map[string]string{"good": "prometheus", "other": "nobody"},
		allowed:    map[string]bool{"prometheus": true},
		authnCalls: map[string]int{},
	}
}

func (f *fakeReviewer) Authenticate(_ context.Context, token string) (authnv1.UserInfo, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authnCalls[token]++
	if len(f.authnErrs) > 0 {
		err := f.authnErrs[0]
		f.authnErrs = f.authnErrs[1:]
		return authnv1.UserInfo{}, false, err
	}
	u, ok := f.users[token]
	return authnv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}, ok, nil
}

func (f *fakeReviewer) Authorize(_ context.Context, u authnv1.UserInfo, attrs Attributes) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authzCalls++
	if len(f.authzErrs) > 0 {
		err := f.authzErrs[0]
		f.authzErrs = f.authzErrs[1:]
		return false, err
	}
	nr := attrs.NonResource
	return f.allowed[u.Username] && attrs.Resource == nil && nr != nil && nr.Verb == "get" && nr.Path == "/metrics", nil
}

func (f *fakeReviewer) totalAuthn() int {
	n := 0
	for _, c := range f.authnCalls {
		n += c
	}
	return n
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

type harness struct {
	r     *fakeReviewer
	clock *clock
	g     *guard
	h     http.Handler
	logs  *strings.Builder
}

// newHarness builds the filter around a fake reviewer and clock, with no
// real sleeps between retries.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	hs := &harness{r: newFake(), clock: &clock{t: time.Unix(1000, 0)}, logs: &strings.Builder{}}
	hs.g = newGuard(hs.r, hs.clock.now, opts, NonResourceURL, "metrics")
	hs.g.backoff = wait.Backoff{Steps: defaultBackoff.Steps}
	log := funcr.New(func(prefix, args string) { hs.logs.WriteString(prefix + args + "\n") }, funcr.Options{})
	h, err := hs.g.filter(log, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	hs.h = h
	return hs
}

func (hs *harness) do(authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, req)
	return w
}

func (hs *harness) get(token string) int { return hs.do("Bearer " + token).Code }

func TestNewServesThroughTheFilter(t *testing.T) {
	r := newFake()
	f := New(r, time.Now, Options{})
	h, err := f(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]int{"bad": 401, "other": 403, "good": 200} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("token %q: %d, want %d", token, w.Code, want)
		}
		if want == 200 && w.Body.String() != "metrics" {
			t.Errorf("allowed request does not reach the handler: %q", w.Body.String())
		}
	}
}

func TestBearerScheme(t *testing.T) {
	hs := newHarness(t, Options{})
	for header, want := range map[string]int{
		"":                 401,
		"Bearer":           401,
		"Bearer ":          401,
		"Bearer     ":      401,
		"Basic Z29vZA==":   401,
		"Bearergood":       401,
		"Token good":       401,
		"Bearer good":      200,
		"bearer good":      200,
		"BEARER good":      200,
		"bEaReR good":      200,
		"  Bearer   good ": 200,
	} {
		w := hs.do(header)
		if w.Code != want {
			t.Errorf("Authorization %q: %d, want %d", header, w.Code, want)
		}
		if want == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: a 401 names the scheme (RFC 7235)", header)
		}
	}
	for token, n := range hs.r.authnCalls {
		if token != "good" {
			t.Errorf("token %q (%d calls): only a well-formed token is reviewed", token, n)
		}
	}
}

func TestAuthnVerdictCachedAtMostAuthnTTL(t *testing.T) {
	hs := newHarness(t, Options{})
	if hs.get("good") != 200 {
		t.Fatal("valid token refused")
	}
	if _, hit := hs.g.authn.Get(sha256.Sum256([]byte("good"))); !hit {
		t.Error("authn cache is keyed by the token's SHA-256")
	}
	if _, hit := hs.g.authn.Get("good"); hit {
		t.Error("authn cache holds the token itself")
	}
	delete(hs.r.users, "good") // revoked
	hs.clock.advance(time.Minute - time.Second)
	if hs.get("good") != 200 || hs.r.authnCalls["good"] != 1 {
		t.Errorf("within the authn TTL the cached verdict holds (%d reviews)", hs.r.authnCalls["good"])
	}
	hs.clock.advance(time.Second)
	if got := hs.get("good"); got != 401 {
		t.Errorf("revoked token after 1 min: %d, want 401 (the allow verdict, cached 5 min, must not outlive the token)", got)
	}
	if hs.r.authnCalls["good"] != 2 {
		t.Errorf("revocation noticed by a second TokenReview, got %d reviews", hs.r.authnCalls["good"])
	}

	// An unknown token is remembered only DenyTTL: a token minted after
	// a failed scrape works soon.
	if hs.get("new") != 401 {
		t.Fatal("unknown token accepted")
	}
	hs.r.users["new"] = "prometheus"
	hs.clock.advance(29 * time.Second)
	if hs.get("new") != 401 {
		t.Error("an authn failure is cached for DenyTTL")
	}
	hs.clock.advance(time.Second)
	if hs.get("new") != 200 {
		t.Error("an authn failure is cached no longer than DenyTTL")
	}
}

func TestAuthzAllowAndDenyTTL(t *testing.T) {
	hs := newHarness(t, Options{})
	if hs.get("good") != 200 {
		t.Fatal("allowed user refused")
	}
	hs.r.allowed["prometheus"] = false // binding removed
	hs.clock.advance(5*time.Minute - time.Second)
	if hs.get("good") != 200 || hs.r.authzCalls != 1 {
		t.Errorf("an allow is cached 5 min (%d reviews)", hs.r.authzCalls)
	}
	if hs.r.authnCalls["good"] != 2 {
		t.Errorf("authn is cached separately, 1 min, and re-reviewed meanwhile: %d reviews", hs.r.authnCalls["good"])
	}
	hs.clock.advance(time.Second)
	if got := hs.get("good"); got != 403 {
		t.Errorf("after 5 min the allow is reviewed again: %d, want 403", got)
	}

	hs.r.allowed["nobody"] = false
	if hs.get("other") != 403 {
		t.Fatal("denied user allowed")
	}
	calls := hs.r.authzCalls
	hs.r.allowed["nobody"] = true // binding added
	hs.clock.advance(30*time.Second - time.Second)
	if hs.get("other") != 403 || hs.r.authzCalls != calls {
		t.Error("a denial is cached for DenyTTL")
	}
	hs.clock.advance(time.Second)
	if got := hs.get("other"); got != 200 {
		t.Errorf("a denial is cached no longer than DenyTTL (30 s): %d", got)
	}
}

func TestAuthzKeyedByUserGroupsAndAttributes(t *testing.T) {
	nr := func(verb, path string) Attributes {
		return Attributes{NonResource: &authzv1.NonResourceAttributes{Verb: verb, Path: path}}
	}
	res := func(verb, ns, name string) Attributes {
		return Attributes{Resource: &authzv1.ResourceAttributes{Verb: verb, Group: "hco.kubevirt.io", Resource: "hyperconvergeds", Namespace: ns, Name: name}}
	}
	u := authnv1.UserInfo{Username: "a", Groups: []string{"g"}}
	k := authzKey(u, nr("get", "/metrics"))
	other := []authnv1.UserInfo{{Username: "b", Groups: []string{"g"}}, {Username: "a", Groups: []string{"h"}}, {Username: "a"}}
	for _, o := range other {
		if authzKey(o, nr("get", "/metrics")) == k {
			t.Errorf("%+v shares %+v's authz verdict", o, u)
		}
	}
	if authzKey(u, nr("post", "/metrics")) == k || authzKey(u, nr("get", "/metrics/extra")) == k {
		t.Error("verb and path are part of the authz key")
	}
	if authzKey(authnv1.UserInfo{Username: "a", Groups: []string{"g"}}, nr("get", "/metrics")) != k {
		t.Error("the same attributes share a verdict")
	}
	r := authzKey(u, res("get", "openshift-cnv", "kubevirt-hyperconverged"))
	for _, o := range []Attributes{res("list", "openshift-cnv", "kubevirt-hyperconverged"), res("get", "other", "kubevirt-hyperconverged"), res("get", "openshift-cnv", "x"), nr("get", "/metrics")} {
		if authzKey(u, o) == r {
			t.Errorf("%+v shares the verdict of another resource request", o)
		}
	}
}

func TestCachesEvictLeastRecentlyUsed(t *testing.T) {
	hs := newHarness(t, Options{MaxEntries: 2})
	for _, tok := range []string{"a", "b", "c"} {
		hs.r.users[tok] = "user-" + tok
		hs.r.allowed["user-"+tok] = true
	}
	for _, tok := range []string{"a", "b", "a", "c"} { // a used after b: b is the oldest when c comes
		if hs.get(tok) != 200 {
			t.Fatalf("token %s refused", tok)
		}
	}
	if hs.get("a") != 200 || hs.r.authnCalls["a"] != 1 {
		t.Errorf("the recently used entry survives (a reviewed %d times)", hs.r.authnCalls["a"])
	}
	if hs.get("b") != 200 || hs.r.authnCalls["b"] != 2 {
		t.Errorf("the least recently used entry is evicted (b reviewed %d times)", hs.r.authnCalls["b"])
	}
	for i := range 100 {
		tok := fmt.Sprintf("flood-%d", i)
		hs.r.users[tok] = tok
		hs.get(tok)
	}
	if hs.g.authn.Len() > 2 || hs.g.authz.Len() > 2 {
		t.Errorf("caches are bounded: authn %d, authz %d entries", hs.g.authn.Len(), hs.g.authz.Len())
	}
}

func TestReviewErrorsDoNotLeak(t *testing.T) {
	const secret = "password=hunter2"
	hs := newHarness(t, Options{})
	leak := fmt.Errorf(`Post "https://10.0.0.1:6443/apis/authentication.k8s.io/v1/tokenreviews": token good rejected, %s`, secret)
	hs.r.authnErrs = []error{leak, leak, leak, leak}
	w := hs.do("Bearer good")
	if w.Code != 500 || strings.TrimSpace(w.Body.String()) != "authentication unavailable" {
		t.Errorf("failed TokenReview: %d %q, want 500 with a generic message", w.Code, w.Body.String())
	}
	hs.r.authzErrs = []error{leak, leak, leak, leak}
	w2 := hs.do("Bearer good")
	if w2.Code != 500 || strings.TrimSpace(w2.Body.String()) != "authorization unavailable" {
		t.Errorf("failed SubjectAccessReview: %d %q, want 500 with a generic message", w2.Code, w2.Body.String())
	}
	for _, body := range []string{w.Body.String(), w2.Body.String()} {
		for _, s := range []string{secret, "10.0.0.1", "good"} {
			if strings.Contains(body, s) {
				t.Errorf("response %q reveals %q", body, s)
			}
		}
	}
	logs := hs.logs.String()
	if !strings.Contains(logs, secret) {
		t.Errorf("the detail goes to the log: %s", logs)
	}
	if strings.Contains(logs, "token good") || !strings.Contains(logs, "token [redacted]") {
		t.Errorf("the token never reaches the log: %s", logs)
	}
	if hs.get("good") != 200 {
		t.Error("errors are not cached")
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.r.authnErrs = []error{
		apierrors.NewServiceUnavailable("etcd leader changed"),
		apierrors.NewTooManyRequests("slow down", 1),
	}
	hs.r.authzErrs = []error{apierrors.NewInternalError(errors.New("boom")), errors.New("connection reset by peer")}
	if got := hs.get("good"); got != 200 {
		t.Fatalf("transient errors then success: %d, want 200", got)
	}
	if hs.r.authnCalls["good"] != 3 || hs.r.authzCalls != 3 {
		t.Errorf("each review retried until success: authn %d, authz %d calls, want 3 and 3", hs.r.authnCalls["good"], hs.r.authzCalls)
	}

	// A persistent failure is tried a bounded number of times.
	down := apierrors.NewServiceUnavailable("down")
	hs.r.authnErrs = []error{down, down, down, down, down, down}
	if hs.get("other") != 500 {
		t.Error("exhausted retries answer 500")
	}
	if hs.r.authnCalls["other"] != defaultBackoff.Steps {
		t.Errorf("a persistent failure is tried %d times, want %d", hs.r.authnCalls["other"], defaultBackoff.Steps)
	}
}

func TestDefinitiveAnswersAreNotRetried(t *testing.T) {
	hs := newHarness(t, Options{})
	if hs.get("bad") != 401 || hs.r.authnCalls["bad"] != 1 {
		t.Errorf("not authenticated is final: %d reviews", hs.r.authnCalls["bad"])
	}
	if hs.get("other") != 403 || hs.r.authzCalls != 1 {
		t.Errorf("denied is final: %d reviews", hs.r.authzCalls)
	}
	gr := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	for i, err := range []error{
		apierrors.NewForbidden(gr, "", errors.New("no")),
		apierrors.NewUnauthorized("bad credentials"),
		apierrors.NewBadRequest("bad"),
		context.DeadlineExceeded,
	} {
		before := hs.r.totalAuthn()
		hs.r.authnErrs = []error{err, nil}
		if got := hs.get(fmt.Sprintf("t-%d", i)); got != 500 {
			t.Errorf("%v: %d, want 500", err, got)
		}
		if n := hs.r.totalAuthn() - before; n != 1 {
			t.Errorf("%v: reviewed %d times, want 1 (only 429 and 5xx are retried)", err, n)
		}
		hs.r.authnErrs = nil
	}
}

func TestDefaultBackoffFitsTheReviewTimeout(t *testing.T) {
	b, total := defaultBackoff, time.Duration(0)
	if b.Steps < 3 || b.Steps > 4 {
		t.Errorf("%d attempts, want 3–4", b.Steps)
	}
	for i := 1; i < b.Steps; i++ {
		total += time.Duration(float64(b.Step()) * (1 + b.Jitter))
	}
	if total > reviewTimeout/4 {
		t.Errorf("retries may sleep %v, want well under the %v review timeout", total, reviewTimeout)
	}
}

func TestDefaultOptions(t *testing.T) {
	d := DefaultOptions()
	if d.AuthnTTL > time.Minute || d.AllowTTL > 5*time.Minute || d.DenyTTL > 30*time.Second || d.MaxEntries <= 0 {
		t.Errorf("defaults too lax: %+v", d)
	}
	if (Options{}).withDefaults() != d {
		t.Error("zero options take the defaults")
	}
}
