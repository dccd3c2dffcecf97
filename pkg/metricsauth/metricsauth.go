// Package metricsauth guards the autopilot's authenticated endpoints (the
// metrics, the console plugin's API): every request's bearer token is
// authenticated by the API server (TokenReview) and the request authorized
// (SubjectAccessReview: the non-resource URL for metrics, the resource it
// shows for the console), with the verdicts cached briefly. It does what controller-runtime's
// metrics/filters does, with client-go alone: that filter links
// k8s.io/apiserver (and its tracing and gRPC dependencies, some 180
// packages) into every command of the binary.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewTimeout bounds one scrape's reviews, retries included.
const reviewTimeout = 10 * time.Second

// defaultBackoff retries a review 4 times within about 1.4 s, far inside
// reviewTimeout: a blip of the API server does not fail a scrape.
var defaultBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 3, Jitter: 0.1, Steps: 4}

// Options bound how long verdicts are trusted and how many are kept.
// Zero fields take DefaultOptions' values.
type Options struct {
	// AuthnTTL is how long a token's TokenReview verdict is trusted: a
	// revoked token works at most this long.
	AuthnTTL time.Duration
	// AllowTTL is how long a SubjectAccessReview allow is trusted.
	AllowTTL time.Duration
	// DenyTTL is how long a denial (or an unknown token) is remembered,
	// short so that a fixed binding or a new token works soon.
	DenyTTL time.Duration
	// MaxEntries bounds each cache; the least recently used entry goes.
	MaxEntries int
}

// DefaultOptions are controller-runtime's metrics/filters values.
func DefaultOptions() Options {
	return Options{AuthnTTL: time.Minute, AllowTTL: 5 * time.Minute, DenyTTL: 30 * time.Second, MaxEntries: 1024}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.AuthnTTL <= 0 {
		o.AuthnTTL = d.AuthnTTL
	}
	if o.AllowTTL <= 0 {
		o.AllowTTL = d.AllowTTL
	}
	if o.DenyTTL <= 0 {
		o.DenyTTL = d.DenyTTL
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = d.MaxEntries
	}
	return o
}

// Reviewer asks the API server who a token is and what it may do.
type Reviewer interface {
	// Authenticate returns the token's user, or ok false.
	Authenticate(ctx context.Context, token string) (user authnv1.UserInfo, ok bool, err error)
	// Authorize reports whether user may do what attrs ask.
	Authorize(ctx context.Context, user authnv1.UserInfo, attrs Attributes) (bool, error)
}

// Attributes are what a request asks to do, as a SubjectAccessReview
// asks it: exactly one of the two is set.
type Attributes struct {
	NonResource *authzv1.NonResourceAttributes `json:"nonResource,omitempty"`
	Resource    *authzv1.ResourceAttributes    `json:"resource,omitempty"`
}

// AttributesFunc says what req asks to do; ok false refuses it (403)
// without a review: a request naming nothing to authorize is not served.
type AttributesFunc func(req *http.Request) (attrs Attributes, ok bool)

// NonResourceURL authorizes the request's method on its path (/metrics).
func NonResourceURL(req *http.Request) (Attributes, bool) {
	return Attributes{NonResource: &authzv1.NonResourceAttributes{Path: req.URL.Path, Verb: strings.ToLower(req.Method)}}, true
}

// Filter returns a metrics server FilterProvider backed by the API server.
func Filter(opts Options) func(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		r, err := NewReviewer(cfg, httpClient)
		if err != nil {
			return nil, err
		}
		return New(r, time.Now, opts), nil
	}
}

// NewReviewer asks the API server cfg names.
func NewReviewer(cfg *rest.Config, httpClient *http.Client) (Reviewer, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return apiReviewer{authn: authn, authz: authz}, nil
}

// New returns a metrics filter using r, with now as the clock (for
// tests): each request's method on its path is authorized.
func New(r Reviewer, now func() time.Time, opts Options) metricsserver.Filter {
	return newGuard(r, now, opts, NonResourceURL, "metrics").filter
}

// Guard wraps next: a request is served only with a bearer token the API
// server authenticates, for a user it allows what attrs says the request
// asks. realm names the endpoint in a 401's challenge.
func Guard(r Reviewer, now func() time.Time, opts Options, attrs AttributesFunc, realm string, log logr.Logger, next http.Handler) http.Handler {
	h, _ := newGuard(r, now, opts, attrs, realm).filter(log, next)
	return h
}

type guard struct {
	reviewer Reviewer
	now      func() time.Time
	opts     Options
	attrs    AttributesFunc
	realm    string
	backoff  wait.Backoff
	// authn maps a token's SHA-256 to its verdict, authz a request's
	// attributes (see authzKey) to theirs.
	authn, authz *lru.Cache
}

type verdict struct {
	user    authnv1.UserInfo
	ok      bool
	expires time.Time
}

func newGuard(r Reviewer, now func() time.Time, opts Options, attrs AttributesFunc, realm string) *guard {
	opts = opts.withDefaults()
	return &guard{
		reviewer: r, now: now, opts: opts, attrs: attrs, realm: realm, backoff: defaultBackoff,
		authn: lru.New(opts.MaxEntries), authz: lru.New(opts.MaxEntries),
	}
}

func (g *guard) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		code, msg, err := g.check(req)
		switch code {
		case http.StatusOK:
			next.ServeHTTP(w, req)
			return
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+g.realm+`"`)
		case http.StatusInternalServerError:
			// The detail is for the operator only: it may name API
			// server internals a client has no business seeing.
			log.Error(err, "request not checked", "realm", g.realm, "path", req.URL.Path)
		}
		http.Error(w, msg, code)
	}), nil
}

// check returns the HTTP status for req and the message for the client:
// 200 allowed, 401 no valid token, 403 denied, 500 the API server could
// not be asked (err says why; never cached).
func (g *guard) check(req *http.Request) (int, string, error) {
	token, ok := bearer(req.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	user, ok, err := g.authenticate(ctx, token)
	if err != nil {
		return http.StatusInternalServerError, "authentication unavailable", fmt.Errorf("token review: %w", redact(err, token))
	}
	if !ok {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	attrs, ok := g.attrs(req)
	if !ok {
		return http.StatusForbidden, "Forbidden", nil
	}
	allowed, err := g.authorize(ctx, user, attrs)
	if err != nil {
		return http.StatusInternalServerError, "authorization unavailable", fmt.Errorf("subject access review for user %q: %w", user.Username, redact(err, token))
	}
	if !allowed {
		return http.StatusForbidden, "Forbidden", nil
	}
	return http.StatusOK, "", nil
}

// bearer returns the token of an RFC 7235 "Bearer" credential, whose
// scheme is case-insensitive.
func bearer(header string) (string, bool) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	return token, strings.EqualFold(scheme, "Bearer") && token != ""
}

func (g *guard) authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error) {
	key := sha256.Sum256([]byte(token))
	if v, hit := g.lookup(g.authn, key); hit {
		return v.user, v.ok, nil
	}
	var user authnv1.UserInfo
	var ok bool
	err := g.retry(ctx, func(ctx context.Context) error {
		var err error
		user, ok, err = g.reviewer.Authenticate(ctx, token)
		return err
	})
	if err != nil {
		return authnv1.UserInfo{}, false, err
	}
	ttl := g.opts.AuthnTTL
	if !ok {
		user, ttl = authnv1.UserInfo{}, min(ttl, g.opts.DenyTTL)
	}
	g.authn.Add(key, verdict{user: user, ok: ok, expires: g.now().Add(ttl)})
	return user, ok, nil
}

func (g *guard) authorize(ctx context.Context, user authnv1.UserInfo, attrs Attributes) (bool, error) {
	key := authzKey(user, attrs)
	if v, hit := g.lookup(g.authz, key); hit {
		return v.ok, nil
	}
	var allowed bool
	err := g.retry(ctx, func(ctx context.Context) error {
		var err error
		allowed, err = g.reviewer.Authorize(ctx, user, attrs)
		return err
	})
	if err != nil {
		return false, err
	}
	ttl := g.opts.DenyTTL
	if allowed {
		ttl = g.opts.AllowTTL
	}
	g.authz.Add(key, verdict{ok: allowed, expires: g.now().Add(ttl)})
	return allowed, nil
}

// authzKey covers everything the SubjectAccessReview is asked about.
func authzKey(user authnv1.UserInfo, attrs Attributes) [32]byte {
	// Cannot fail: only strings, slices and maps of strings.
	raw, _ := json.Marshal(struct {
		User  authnv1.UserInfo
		Attrs Attributes
	}{user, attrs})
	return sha256.Sum256(raw)
}

// lookup returns key's unexpired verdict, dropping an expired one.
func (g *guard) lookup(c *lru.Cache, key [32]byte) (verdict, bool) {
	v, hit := c.Get(key)
	if !hit {
		return verdict{}, false
	}
	e := v.(verdict)
	if !g.now().Before(e.expires) {
		c.Remove(key)
		return verdict{}, false
	}
	return e, true
}

// retry calls review until it succeeds, fails for good, or the backoff
// runs out; it returns the last error.
func (g *guard) retry(ctx context.Context, review func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, g.backoff, func(ctx context.Context) (bool, error) {
		last = review(ctx)
		switch {
		case last == nil:
			return true, nil
		case transient(last):
			return false, nil
		default:
			return false, last
		}
	})
	if err != nil && wait.Interrupted(err) && last != nil {
		return last
	}
	return err
}

// transient reports whether a review may succeed when asked again: the API
// server was overloaded (429), failed (5xx) or unreachable. A 4xx is the
// same next time; a cancelled request is not worth finishing.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
	}
	return true
}

// redact keeps the token out of the log should an error quote it.
func redact(err error, token string) error {
	if !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]"))
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

func (a apiReviewer) Authorize(ctx context.Context, user authnv1.UserInfo, attrs Attributes) (bool, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := a.authz.SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: attrs.NonResource, ResourceAttributes: attrs.Resource,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
