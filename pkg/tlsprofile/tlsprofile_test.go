package tlsprofile

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func apiserver(profile map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	if profile != nil {
		u.Object["spec"] = map[string]any{"tlsSecurityProfile": profile}
	}
	u.SetGroupVersionKind(APIServerGVK)
	u.SetName(APIServerName)
	return u
}

// Expectations from OpenShift's definitions (openshift/api config/v1
// types_tlssecurityprofile.go, TLSProfiles) and Go's crypto/tls.
func TestFromAPIServer(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      *unstructured.Unstructured
		want    string
		min     uint16
		has     []uint16
		hasNot  []uint16
		invalid bool
	}{
		{name: "no APIServer (plain Kubernetes)", in: nil, want: "Intermediate", min: tls.VersionTLS12,
			has: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, hasNot: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
		{name: "no profile set", in: apiserver(nil), want: "Intermediate", min: tls.VersionTLS12},
		{name: "Old", in: apiserver(map[string]any{"type": "Old", "old": map[string]any{}}), want: "Old", min: tls.VersionTLS10,
			has: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
		{name: "Modern", in: apiserver(map[string]any{"type": "Modern", "modern": map[string]any{}}), want: "Modern", min: tls.VersionTLS13},
		{name: "Custom", in: apiserver(map[string]any{"type": "Custom", "custom": map[string]any{
			"ciphers": []any{"ECDHE-RSA-AES256-GCM-SHA384", "NOT-A-CIPHER"}, "minTLSVersion": "VersionTLS12"}}), want: "Custom", min: tls.VersionTLS12,
			has: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}, hasNot: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
		{name: "Custom without custom", in: apiserver(map[string]any{"type": "Custom"}), invalid: true},
		{name: "Custom, no cipher Go knows", in: apiserver(map[string]any{"type": "Custom", "custom": map[string]any{
			"ciphers": []any{"NOT-A-CIPHER"}, "minTLSVersion": "VersionTLS12"}}), invalid: true},
		{name: "Custom, unknown version", in: apiserver(map[string]any{"type": "Custom", "custom": map[string]any{
			"ciphers": []any{"ECDHE-RSA-AES256-GCM-SHA384"}, "minTLSVersion": "VersionTLS99"}}), invalid: true},
		{name: "unknown type", in: apiserver(map[string]any{"type": "Paranoid"}), invalid: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := FromAPIServer(c.in)
			if c.invalid {
				if err == nil {
					t.Fatalf("want an error, got %v", p)
				}
				return
			}
			if err != nil || p.Name != c.want || p.MinVersion != c.min {
				t.Fatalf("got %v, %v", p, err)
			}
			for _, id := range c.has {
				if !contains(p.Ciphers, id) {
					t.Errorf("%s missing", tls.CipherSuiteName(id))
				}
			}
			for _, id := range c.hasNot {
				if contains(p.Ciphers, id) {
					t.Errorf("%s present", tls.CipherSuiteName(id))
				}
			}
		})
	}
}

func contains(ids []uint16, id uint16) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// A profile set at run time applies to the next handshake.
func TestServedFollowsAChange(t *testing.T) {
	served := NewServed(Intermediate())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.StartTLS()
	// The config the listener serves (with its certificate), as
	// controller-runtime's metrics server hands it to its TLSOpts.
	served.TLSOpt()(srv.TLS)
	defer srv.Close()
	dial := func(max uint16, cipher uint16) error {
		cfg := &tls.Config{InsecureSkipVerify: true, MaxVersion: max} //nolint:gosec // a test server's own certificate
		if cipher != 0 {
			cfg.CipherSuites = []uint16{cipher}
		}
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), cfg)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	if err := dial(tls.VersionTLS12, 0); err != nil {
		t.Fatalf("Intermediate refuses TLS 1.2: %v", err)
	}
	if err := dial(tls.VersionTLS11, 0); err == nil {
		t.Fatal("Intermediate accepts TLS 1.1")
	}
	modern, _ := FromAPIServer(apiserver(map[string]any{"type": "Modern", "modern": map[string]any{}}))
	if !served.Set(modern) {
		t.Fatal("a change reported as none")
	}
	if err := dial(tls.VersionTLS12, 0); err == nil {
		t.Fatal("Modern accepts TLS 1.2")
	}
	if err := dial(tls.VersionTLS13, 0); err != nil {
		t.Fatalf("Modern refuses TLS 1.3: %v", err)
	}
	custom, _ := FromAPIServer(apiserver(map[string]any{"type": "Custom", "custom": map[string]any{
		"ciphers": []any{"ECDHE-ECDSA-AES256-GCM-SHA384"}, "minTLSVersion": "VersionTLS12"}}))
	served.Set(custom)
	if err := dial(tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); err == nil {
		t.Fatal("Custom accepts a suite it does not list")
	}
	if served.Set(custom) {
		t.Fatal("the same profile reported as a change")
	}
}

// Before anything is served: absent is Intermediate, not understood is
// the strictest, never a weaker guess.
func TestInitial(t *testing.T) {
	ctx := context.Background()
	p, err := Initial(ctx, fake.NewClientBuilder().Build())
	if err != nil || p.Name != "Intermediate" {
		t.Fatalf("absent: %v %v", p, err)
	}
	bad := apiserver(map[string]any{"type": "Paranoid"})
	p, err = Initial(ctx, fake.NewClientBuilder().WithObjects(bad).Build())
	if err == nil || p.MinVersion != tls.VersionTLS13 {
		t.Fatalf("not understood: %v %v", p, err)
	}
	modern := apiserver(map[string]any{"type": "Modern", "modern": map[string]any{}})
	if p, err = Initial(ctx, fake.NewClientBuilder().WithObjects(modern).Build()); err != nil || p.Name != "Modern" {
		t.Fatalf("Modern: %v %v", p, err)
	}
}
