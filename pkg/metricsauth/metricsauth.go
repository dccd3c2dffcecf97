// Package metricsauth guards the metrics endpoint: every scrape's bearer
// token is authenticated by the API server (TokenReview) and the request
// authorized (SubjectAccessReview on the non-resource URL), with the
// verdicts cached briefly. It does what controller-runtime's
// metrics/filters does, with client-go alone: that filter links
// k8s.io/apiserver (and its tracing and gRPC dependencies, some 180
// packages) into every command of the binary.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long verdicts are remembered: a scrape every 30 s costs no review
// while they hold. A denial is remembered shorter, so a fixed binding
// takes effect soon.
const (
	allowTTL      = 5 * time.Minute
	denyTTL       = 30 * time.Second
	reviewTimeout = 10 * time.Second
	maxEntries    = 1024
)

// Reviewer asks the API server who a token is and what it may do.
type Reviewer interface {
	// Authenticate returns the token's user, or ok false.
	Authenticate(ctx context.Context, token string) (user authnv1.UserInfo, ok bool, err error)
	// Authorize reports whether user may verb the non-resource path.
	Authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, error)
}

// Filter is a metrics server FilterProvider backed by the API server.
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return New(apiReviewer{authn: authn, authz: authz}, time.Now), nil
}

// New returns a filter using r, with now as the clock (for tests).
func New(r Reviewer, now func() time.Time) metricsserver.Filter {
	g := &guard{reviewer: r, now: now, cache: map[[32]byte]entry{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			code, msg := g.check(req)
			if code != http.StatusOK {
				if code == http.StatusInternalServerError {
					log.Error(errors.New(msg), "metrics request not checked")
				}
				http.Error(w, msg, code)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}
}

type entry struct {
	code    int
	msg     string
	expires time.Time
}

type guard struct {
	reviewer Reviewer
	now      func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]entry
}

// check returns the HTTP status for req: 200 allowed, 401 no valid token,
// 403 denied, 500 the API server could not be asked (not cached).
func (g *guard) check(req *http.Request) (int, string) {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return http.StatusUnauthorized, "Unauthorized"
	}
	verb, path := strings.ToLower(req.Method), req.URL.Path
	key := sha256.Sum256([]byte(token + "\x00" + verb + "\x00" + path))
	g.mu.Lock()
	e, hit := g.cache[key]
	g.mu.Unlock()
	if hit && g.now().Before(e.expires) {
		return e.code, e.msg
	}

	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	user, ok, err := g.reviewer.Authenticate(ctx, token)
	if err != nil {
		return http.StatusInternalServerError, "Authentication failed: " + err.Error()
	}
	e = entry{code: http.StatusUnauthorized, msg: "Unauthorized", expires: g.now().Add(denyTTL)}
	if ok {
		allowed, err := g.reviewer.Authorize(ctx, user, verb, path)
		switch {
		case err != nil:
			return http.StatusInternalServerError, fmt.Sprintf("Authorization for user %s failed: %v", user.Username, err)
		case allowed:
			e = entry{code: http.StatusOK, expires: g.now().Add(allowTTL)}
		default:
			e = entry{code: http.StatusForbidden, msg: fmt.Sprintf("Authorization denied for user %s", user.Username), expires: g.now().Add(denyTTL)}
		}
	}
	g.mu.Lock()
	if len(g.cache) >= maxEntries {
		g.evict()
	}
	g.cache[key] = e
	g.mu.Unlock()
	return e.code, e.msg
}

// evict drops expired entries, or everything if none has expired: a flood
// of distinct tokens must not grow memory without bound.
func (g *guard) evict() {
	now := g.now()
	for k, e := range g.cache {
		if !now.Before(e.expires) {
			delete(g.cache, k)
		}
	}
	if len(g.cache) >= maxEntries {
		g.cache = map[[32]byte]entry{}
	}
}

type apiReviewer struct {
	authn authnclient.AuthenticationV1Interface
	authz authzclient.AuthorizationV1Interface
}

func (a apiReviewer) Authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error) {
	tr, err := a.authn.TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, false, err
	}
	return tr.Status.User, tr.Status.Authenticated, nil
}

func (a apiReviewer) Authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := a.authz.SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
