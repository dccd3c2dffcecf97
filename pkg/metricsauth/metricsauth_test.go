package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
)

type fakeReviewer struct {
	users   map[string]string // token → user
	allowed map[string]bool   // user → may GET /metrics
	fail    bool
	calls   int
}

func (f *fakeReviewer) Authenticate(_ context.Context, token string) (authnv1.UserInfo, bool, error) {
	f.calls++
	if f.fail {
		return authnv1.UserInfo{}, false, errors.New("api server down")
	}
	u, ok := f.users[token]
	return authnv1.UserInfo{Username: u}, ok, nil
}

func (f *fakeReviewer) Authorize(_ context.Context, u authnv1.UserInfo, verb, path string) (bool, error) {
	f.calls++
	return f.allowed[u.Username] && verb == "get" && path == "/metrics", nil
}

func TestFilter(t *testing.T) {
	r := &fakeReviewer{users: map[string]string{"good": "prometheus", "other": "nobody"}, allowed: map[string]bool{"prometheus": true}}
	now := time.Unix(0, 0)
	f := New(r, func() time.Time { return now })
	h, _ := f(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	get := func(token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	for token, want := range map[string]int{"": 401, "bad": 401, "other": 403, "good": 200} {
		if got := get(token); got != want {
			t.Errorf("token %q: %d, want %d", token, got, want)
		}
	}
	calls := r.calls
	if get("good") != 200 || r.calls != calls {
		t.Errorf("a scrape within the allow TTL costs no review (%d → %d calls)", calls, r.calls)
	}
	now = now.Add(allowTTL + time.Second)
	r.fail = true
	if get("good") != 500 {
		t.Error("an expired verdict is reviewed again; an API error is a 500, never an allow")
	}
	r.fail = false
	if get("good") != 200 {
		t.Error("errors are not cached")
	}
}
