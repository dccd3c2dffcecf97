package redact

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// The cases are the vendors' own examples: FAR's README (a template with
// --password in sharedparameters, node values in nodeparameters), a
// Secret, a StorageClass with glusterfs's restuserkey, kubectl's
// last-applied copy, and a URL with userinfo.
func TestCredentialsNeverLeave(t *testing.T) {
	for name, y := range map[string]string{
		"secret data": `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {--password: c2VjcmV0LXBsYW50}, stringData: {token: secret-plant}}`,
		"far template shared": `{apiVersion: fence-agents-remediation.medik8s.io/v1alpha1, kind: FenceAgentsRemediationTemplate, metadata: {name: t},
			spec: {template: {spec: {agent: fence_ipmilan, sharedparameters: {--username: admin, --password: secret-plant}}}}}`,
		"far template per node": `{apiVersion: fence-agents-remediation.medik8s.io/v1alpha1, kind: FenceAgentsRemediationTemplate, metadata: {name: t},
			spec: {template: {spec: {nodeparameters: {--password: {worker-0: secret-plant, worker-1: secret-plant}}}}}}`,
		"far":           `{apiVersion: fence-agents-remediation.medik8s.io/v1alpha1, kind: FenceAgentsRemediation, metadata: {name: worker-0}, spec: {sharedparameters: {--password: secret-plant}}}`,
		"storage class": `{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: g}, provisioner: kubernetes.io/glusterfs, parameters: {restuser: admin, restuserkey: secret-plant}}`,
		"last applied":  `{apiVersion: v1, kind: Node, metadata: {name: n, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"password":"secret-plant"}'}}}`,
		"url userinfo": `{apiVersion: observability.openshift.io/v1, kind: ClusterLogForwarder, metadata: {name: l},
			spec: {outputs: [{name: o, http: {url: "https://user:secret-plant@logs.example.com/x"}}]}}`,
		// A remote write endpoint's headers (an Authorization header) in
		// the monitoring configuration, parsed; a document that does not
		// parse is not let out.
		"remote write headers": `{apiVersion: v1, kind: ConfigMap, metadata: {name: cluster-monitoring-config, namespace: openshift-monitoring},
			data: {config.yaml: "prometheusK8s:\n  remoteWrite:\n  - url: https://metrics.example.com/api\n    headers:\n      Authorization: Bearer secret-plant\n      X-Scope-OrgID: secret-plant\n"}}`,
		"user workload remote write headers": `{apiVersion: v1, kind: ConfigMap, metadata: {name: user-workload-monitoring-config, namespace: openshift-user-workload-monitoring},
			data: {config.yaml: "prometheus:\n  remoteWrite:\n  - url: https://m.example.com\n    headers: {Authorization: 'Basic secret-plant'}\n"}}`,
		"monitoring config that does not parse": `{apiVersion: v1, kind: ConfigMap, metadata: {name: cluster-monitoring-config, namespace: openshift-monitoring},
			data: {config.yaml: "prometheusK8s:\n  remoteWrite: [\n  - headers: {Authorization: Bearer secret-plant\n"}}`,
		"log forwarder output headers": `{apiVersion: observability.openshift.io/v1, kind: ClusterLogForwarder, metadata: {name: l},
			spec: {outputs: [{name: o, type: http, http: {url: "https://logs.example.com", headers: {Authorization: "Bearer secret-plant"}}}]}}`,
		// net/url reads the userinfo up to the authority's last "@".
		"url user an e-mail address":   `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {u: "https://ops@example.com:secret-plant@logs.example.com/x"}}`,
		"url password holding @":       `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {u: "see https://ops:secret@plant@logs.example.com:8443/x?y for logs", w: "secret@plant"}}`,
		"url password holding a quote": `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {u: "--url=https://ops:sec\"ret-plant@logs.example.com --x"}}`,
		"url in yaml flow":             `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {u: "{url: https://ops:secret-plant@h}"}}`,
		"url inside a longer string": `{apiVersion: v1, kind: ConfigMap, metadata: {name: cluster-monitoring-config},
			data: {config.yaml: "prometheusK8s:\n  remoteWrite:\n  - url: https://writer:secret-plant@metrics.example.com/api\n", args: "--url=https://u:secret-plant@h --other"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			in := obj(t, y)
			before, _ := json.Marshal(in.Object)
			out := Object(in)
			after, _ := json.Marshal(out.Object)
			if strings.Contains(string(after), "secret-plant") || strings.Contains(string(after), "c2VjcmV0LXBsYW50") ||
				strings.Contains(strings.ReplaceAll(string(after), `"w":"secret@plant"`, ""), "plant") {
				t.Fatalf("a credential left: %s", after)
			}
			if again, _ := json.Marshal(in.Object); string(again) != string(before) {
				t.Fatalf("the input was changed: %s", again)
			}
			if out.GetName() != in.GetName() || out.GetKind() != in.GetKind() {
				t.Fatalf("identity changed: %s", after)
			}
		})
	}
}

// What holds no credential comes back as it is, the same object: a
// render reads it unchanged.
func TestNothingElseChanges(t *testing.T) {
	for _, y := range []string{
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {password: visible}}`,
		`{apiVersion: v1, kind: Node, metadata: {name: n, labels: {a: b}}, spec: {providerID: "baremetalhost:///ns/host"}}`,
		`{apiVersion: x/v1, kind: Y, metadata: {name: y}, spec: {url: "https://user@example.com/", mail: "a@b.c", s3: "s3://bucket/key"}}`,
		`{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: g}, provisioner: p}`,
		// A CRD's schema of a headers field is no header map.
		`{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: clusterlogforwarders.observability.openshift.io},
			spec: {versions: [{name: v1, schema: {openAPIV3Schema: {properties: {spec: {properties: {outputs: {items: {properties: {http: {properties: {headers: {type: object, additionalProperties: {type: string}, description: "Headers"}}}}}}}}}}}}]}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {headers: "x"}}`,
		// "@" in a path or query is no userinfo, whether net/url reads
		// the URL or not.
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {u: "http://${HOST}:${PORT}/notify?to=ops@example.com", v: "https://h/x@y"}}`,
	} {
		in := obj(t, y)
		if out := Object(in); out != in {
			t.Errorf("changed without a credential: %v", out.Object)
		}
	}
	if Object(nil) != nil {
		t.Error("nil")
	}
}

// Over generated URLs, users and passwords (e-mail addresses, "@", ":",
// and other reserved characters in them), wherever the URL sits in a
// string, no password net/url reads from it is left in the output.
func TestNoPasswordNetURLReadsIsLeft(t *testing.T) {
	r := rand.New(rand.NewSource(38))
	// RFC 3986 userinfo characters, "@" too: a "/", "?" or "#" ends the
	// authority, so no URL carries one unencoded in its password.
	alphabet := "abcdefghijklmnopqrstuvwxyz0123456789@:!$&'()*+,;=%-._~"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.Intn(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 3000; i++ {
		user := []string{"ops", "ops@example.com", word(4)}[r.Intn(3)]
		pw := "Zq" + word(6+r.Intn(6)) + "Zq"
		raw := "https://" + user + ":" + pw + "@logs.example.com:8443/x?y=1"
		around := []string{"%s", "--url=%s --other", "url: %s\nnext: x", "[%s]", "\"%s\"", "url: '%s'"}[r.Intn(6)]
		s := fmt.Sprintf(around, raw)
		out, _ := userinfo(s)
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			continue // not a URL net/url reads: nothing it would call a password
		}
		p, _ := u.User.Password()
		if p != "" && strings.Contains(out, p) {
			t.Fatalf("%q: password %q left in %q", s, p, out)
		}
		if strings.Contains(out, "Zq") && strings.Count(out, "Zq") >= strings.Count(s, "Zq") {
			t.Fatalf("%q: nothing redacted: %q", s, out)
		}
	}
}

// Whatever the user and password, and whatever surrounds the URL, no
// password net/url reads is left in the output.
func FuzzUserinfo(f *testing.F) {
	for _, seed := range [][3]string{
		{"ops@example.com", "pw", "%s"}, {"u", "p@w", "--url=%s --x"}, {"u", "p'w", "'%s'"}, {"u", "p:w", "url: %s"}, {"", "p", "[%s]"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, user, pw, around string) {
		if !strings.Contains(around, "%s") || strings.Count(around, "%") != 1 || pw == "" {
			return
		}
		raw := "https://" + user + ":" + pw + "@logs.example.com/x"
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			return
		}
		p, has := u.User.Password()
		if !has || len(p) < 4 || strings.Contains("https://logs.example.com/x"+around+Mark+user, p) || strings.Count(raw, p) > 1 {
			// Too short to tell from the rest of the output, or also
			// elsewhere in the URL (a "#" in what was meant as the
			// password starts the fragment, so net/url reads a shorter
			// password that the host may repeat).
			return
		}
		out, _ := userinfo(fmt.Sprintf(around, raw))
		if strings.Contains(out, p) {
			t.Fatalf("password %q left in %q", p, out)
		}
	})
}
