// Package tlsprofile serves TLS as the cluster says: the minimum version
// and cipher suites of APIServer/cluster's spec.tlsSecurityProfile (Old,
// Intermediate, Modern, Custom), with OpenShift's own profile definitions
// (github.com/openshift/api config/v1, TLSProfiles). Without the APIServer
// kind (plain Kubernetes) or without a profile set, Intermediate, as
// OpenShift defaults. A change applies to the next handshake: no restart.
package tlsprofile

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// APIServerGVK is the OpenShift kind holding the cluster's profile.
var APIServerGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "APIServer"}

// APIServerName is the one object of that kind.
const APIServerName = "cluster"

// Profile is what an endpoint serves.
type Profile struct {
	// Name is the profile's type (Old, Intermediate, Modern, Custom).
	Name       string
	MinVersion uint16
	// Ciphers are the TLS 1.2-and-older suites (Go negotiates TLS 1.3's
	// suites itself; they are not configurable).
	Ciphers []uint16
}

// String says what is served, for logs and the health view.
func (p Profile) String() string {
	return fmt.Sprintf("%s (minimum %s, %d TLS 1.2 cipher suites)", p.Name, tls.VersionName(p.MinVersion), len(p.Ciphers))
}

// Intermediate is OpenShift's default profile.
func Intermediate() Profile {
	p, err := fromSpec(string(configv1.TLSProfileIntermediateType), configv1.TLSProfiles[configv1.TLSProfileIntermediateType])
	if err != nil {
		panic(err) // the vendor's own definition: a broken build, not input
	}
	return p
}

// Strictest is what is served while the cluster's profile is not
// understood: Modern (TLS 1.3 only), never a weaker guess.
func Strictest() Profile {
	p, err := fromSpec(string(configv1.TLSProfileModernType), configv1.TLSProfiles[configv1.TLSProfileModernType])
	if err != nil {
		panic(err)
	}
	return p
}

// Initial reads the cluster's profile once, before anything is served,
// with r (a direct reader): without the APIServer kind or object,
// Intermediate; not understood, Strictest; a read that fails,
// Intermediate, until the reconciler reads it (err says why).
func Initial(ctx context.Context, r client.Reader) (Profile, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(APIServerGVK)
	switch err := r.Get(ctx, client.ObjectKey{Name: APIServerName}, u); {
	case err == nil:
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return Intermediate(), nil
	default:
		return Intermediate(), fmt.Errorf("read APIServer/%s: %w", APIServerName, err)
	}
	p, err := FromAPIServer(u)
	if err != nil {
		return Strictest(), err
	}
	return p, nil
}

// FromAPIServer reads the profile of APIServer/cluster u; a nil u (the
// kind not served, or the object absent) is Intermediate. An error names
// what is not understood: the caller keeps what it serves.
func FromAPIServer(u *unstructured.Unstructured) (Profile, error) {
	if u == nil {
		return Intermediate(), nil
	}
	var as configv1.APIServer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &as); err != nil {
		return Profile{}, fmt.Errorf("APIServer/%s spec.tlsSecurityProfile: %w", u.GetName(), err)
	}
	tp := as.Spec.TLSSecurityProfile
	if tp == nil || tp.Type == "" {
		return Intermediate(), nil
	}
	switch tp.Type {
	case configv1.TLSProfileOldType, configv1.TLSProfileIntermediateType, configv1.TLSProfileModernType:
		return fromSpec(string(tp.Type), configv1.TLSProfiles[tp.Type])
	case configv1.TLSProfileCustomType:
		if tp.Custom == nil {
			return Profile{}, fmt.Errorf("APIServer/%s spec.tlsSecurityProfile: type Custom without custom", u.GetName())
		}
		return fromSpec(string(tp.Type), &tp.Custom.TLSProfileSpec)
	}
	return Profile{}, fmt.Errorf("APIServer/%s spec.tlsSecurityProfile.type %q is not understood: want Old, Intermediate, Modern or Custom", u.GetName(), tp.Type)
}

// versions are the API's version names (configv1.TLSProtocolVersion).
var versions = map[configv1.TLSProtocolVersion]uint16{
	configv1.VersionTLS10: tls.VersionTLS10, configv1.VersionTLS11: tls.VersionTLS11,
	configv1.VersionTLS12: tls.VersionTLS12, configv1.VersionTLS13: tls.VersionTLS13,
}

// openSSLToIANA maps the profiles' OpenSSL cipher names to IANA's, as
// openshift/library-go pkg/crypto/crypto.go (openSSLToIANACiphers,
// OpenSSLToIANACipherSuites) does; a name Go cannot negotiate is dropped,
// as there. TLS 1.3's names are IANA's already.
var openSSLToIANA = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
	"ECDHE-RSA-DES-CBC3-SHA":        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
}

// fromSpec turns a profile spec into what Go's crypto/tls serves.
func fromSpec(name string, spec *configv1.TLSProfileSpec) (Profile, error) {
	if spec == nil {
		return Profile{}, fmt.Errorf("TLS profile %s has no definition", name)
	}
	min, ok := versions[spec.MinTLSVersion]
	if !ok {
		return Profile{}, fmt.Errorf("TLS profile %s: minTLSVersion %q is not understood: want VersionTLS10 to VersionTLS13", name, spec.MinTLSVersion)
	}
	byName := map[string]uint16{}
	for _, c := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if slices.Contains(c.SupportedVersions, tls.VersionTLS12) || slices.Contains(c.SupportedVersions, tls.VersionTLS10) {
			byName[c.Name] = c.ID
		}
	}
	p := Profile{Name: name, MinVersion: min}
	tls13 := false
	for _, c := range spec.Ciphers {
		if strings.HasPrefix(c, "TLS_") && !strings.Contains(c, "_WITH_") {
			tls13 = true // a TLS 1.3 suite: always negotiated
			continue
		}
		iana := openSSLToIANA[c]
		if iana == "" && strings.HasPrefix(c, "TLS_") {
			iana = c // an IANA name given as such
		}
		if id, ok := byName[iana]; ok {
			p.Ciphers = append(p.Ciphers, id)
		}
	}
	if min < tls.VersionTLS13 && len(p.Ciphers) == 0 {
		return Profile{}, fmt.Errorf("TLS profile %s allows TLS below 1.3 but names no cipher suite Go can negotiate (%v)", name, spec.Ciphers)
	}
	if min == tls.VersionTLS13 && !tls13 && len(spec.Ciphers) > 0 {
		return Profile{}, fmt.Errorf("TLS profile %s requires TLS 1.3 but names no TLS 1.3 cipher suite (%v)", name, spec.Ciphers)
	}
	return p, nil
}

// Apply sets c's minimum version and cipher suites.
func (p Profile) Apply(c *tls.Config) {
	c.MinVersion = p.MinVersion
	c.CipherSuites = slices.Clone(p.Ciphers)
}

// Served is the profile the endpoints serve now, swapped at run time.
type Served struct{ cur atomic.Pointer[Profile] }

// NewServed serves p.
func NewServed(p Profile) *Served {
	s := &Served{}
	s.cur.Store(&p)
	return s
}

// Set serves p from the next handshake; it reports whether that changed
// anything.
func (s *Served) Set(p Profile) bool {
	old := s.cur.Swap(&p)
	return old == nil || old.Name != p.Name || old.MinVersion != p.MinVersion || !slices.Equal(old.Ciphers, p.Ciphers)
}

// Current is the profile served now.
func (s *Served) Current() Profile { return *s.cur.Load() }

// TLSOpt configures a server's tls.Config to serve the current profile at
// each handshake (a copy of the config the server built, certificate
// included).
func (s *Served) TLSOpt() func(*tls.Config) {
	return func(base *tls.Config) {
		s.Current().Apply(base)
		base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.GetConfigForClient = nil
			s.Current().Apply(c)
			return c, nil
		}
	}
}
