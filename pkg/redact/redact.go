// Package redact keeps credentials in the cluster: every output that
// leaves it (facts files, render outputs and the diff, the debug
// endpoints) passes its objects through Object first. Credentials are
// found by field, from what each vendor documents as one, not only by
// kind: a Secret is the obvious door, a fence agent's password in a CR's
// spec or a URL's userinfo are the others.
package redact

import (
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Mark replaces every redacted value.
const Mark = "REDACTED"

// rule redacts the fields of one kind that hold credentials.
type rule struct {
	group, kind string
	// maps are the paths of string maps whose values are all redacted;
	// nested maps under them (a value per node) are redacted whole.
	maps [][]string
	why  string
}

// rules are the vendor-documented credential fields of the kinds the
// autopilot reads. Free-form parameter maps are redacted whole: their
// keys are the vendor's agent's or provisioner's own vocabulary, so a
// list of credential names would miss the next one.
var rules = []rule{
	{group: "", kind: "Secret", maps: [][]string{{"data"}, {"stringData"}},
		why: "k8s.io/api core/v1 types.go (Secret): data and stringData are the secret"},
	{group: "fence-agents-remediation.medik8s.io", kind: "FenceAgentsRemediationTemplate",
		maps: [][]string{{"spec", "template", "spec", "sharedparameters"}, {"spec", "template", "spec", "nodeparameters"}},
		why:  "medik8s/fence-agents-remediation api/v1alpha1/fenceagentsremediation_types.go (SharedParameters, NodeParameters) and README: the agent's parameters, --password among them, are passed as given"},
	{group: "fence-agents-remediation.medik8s.io", kind: "FenceAgentsRemediation",
		maps: [][]string{{"spec", "sharedparameters"}, {"spec", "nodeparameters"}},
		why:  "medik8s/fence-agents-remediation api/v1alpha1/fenceagentsremediation_types.go: the template's parameters, copied into each remediation"},
	{group: "storage.k8s.io", kind: "StorageClass", maps: [][]string{{"parameters"}},
		why: "k8s.io/api storage/v1 types.go (StorageClass.Parameters): opaque to Kubernetes; in-tree and CSI provisioners have taken passwords there (glusterfs restuserkey)"},
}

// Object returns u with every credential it holds replaced by Mark: a
// copy when anything was redacted, u itself otherwise (nil stays nil).
// What stays is everything a render reads.
func Object(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u == nil {
		return nil
	}
	c := u.DeepCopy()
	changed := false
	// kubectl apply keeps the whole object as applied, credentials
	// included (k8s.io/api core/v1 annotation_key_constants.go,
	// LastAppliedConfigAnnotation).
	if ann := c.GetAnnotations(); ann != nil {
		if _, ok := ann[corev1.LastAppliedConfigAnnotation]; ok {
			ann[corev1.LastAppliedConfigAnnotation] = Mark
			c.SetAnnotations(ann)
			changed = true
		}
	}
	gvk := c.GroupVersionKind()
	for _, r := range rules {
		if r.group != gvk.Group || r.kind != gvk.Kind {
			continue
		}
		for _, path := range r.maps {
			if m, ok, _ := unstructured.NestedFieldNoCopy(c.Object, path...); ok {
				if mm, ok := m.(map[string]any); ok {
					for k := range mm {
						mm[k] = Mark
						changed = true
					}
				}
			}
		}
	}
	if monitoringConfig(c) {
		changed = true
	}
	// HTTP headers sent as given (a log forwarder output's): an
	// Authorization header or a token among them.
	for _, h := range headerFields {
		if h.group != gvk.Group || h.kind != gvk.Kind {
			continue
		}
		if v, ok, _ := unstructured.NestedFieldNoCopy(c.Object, h.path...); ok && headerMaps(v) {
			changed = true
		}
	}
	// A URL's password, wherever a string holds one (an output's
	// endpoint, a registry): RFC 3986 userinfo.
	if walkStrings(c.Object, userinfo) {
		changed = true
	}
	if !changed {
		return u
	}
	return c
}

// userinfo redacts the password of every URL in s (a value of its own, a
// flag such as --url=https://u:p@h, a line of an embedded configuration),
// as net/url reads it (RFC 3986: the userinfo runs to the authority's last
// "@", so a user that is an e-mail address or a password holding "@" is
// read whole). A URL that does not parse, with an "@" after its "://",
// loses everything before that "@": what cannot be read is not let out.
func userinfo(s string) (string, bool) {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s, false
	}
	var b strings.Builder
	changed := false
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		start := i
		for start > 0 && schemeChar(rest[start-1]) {
			start--
		}
		// A URL opened by a quote ends at its close; any URL ends at what
		// no URL holds unencoded.
		var quote byte
		if start > 0 && (rest[start-1] == '\'' || rest[start-1] == '"') {
			quote = rest[start-1]
		}
		// end: where the URL ends as written (a delimiter, or the quote
		// that opened it); wide: the end of the word (white space), in
		// case such a character closed it inside a password.
		end, wide := -1, i+3
		for wide < len(rest) && rest[wide] > ' ' {
			if end < 0 && (urlEnds(rest[wide]) || rest[wide] == quote) {
				end = wide
			}
			wide++
		}
		if end < 0 {
			end = wide
		}
		out, ok, parsed := redactURL(rest[start:end], i-start+3)
		if end < wide && (!parsed || !ok) && strings.Contains(rest[end:wide], "@") {
			// The quote may have closed inside a password: read the URL
			// to the end of the word instead.
			if o, redacted, _ := redactURL(rest[start:wide], i-start+3); redacted || !parsed {
				out, ok, end = o, redacted || ok, wide
			}
		}
		b.WriteString(rest[:start])
		b.WriteString(out)
		changed = changed || ok
		rest = rest[end:]
	}
	return b.String(), changed
}

// redactURL redacts the password of token, a URL whose authority starts
// at auth; parsed says whether net/url read it.
func redactURL(token string, auth int) (out string, changed, parsed bool) {
	out, changed = redactParsed(token, auth)
	if _, err := url.Parse(token); err == nil {
		return out, changed, true
	}
	return out, changed, false
}

func redactParsed(token string, auth int) (string, bool) {
	u, err := url.Parse(token)
	if err == nil {
		if u.User == nil {
			return token, false
		}
		if _, has := u.User.Password(); !has {
			return token, false // a user alone is no secret
		}
		// The userinfo net/url read: up to the authority's last "@".
		host := strings.IndexAny(token[auth:], "/?#")
		if host < 0 {
			host = len(token) - auth
		}
		at := strings.LastIndex(token[auth:auth+host], "@")
		if at < 0 {
			return Mark, true // net/url read a password where this does not: not let out
		}
		colon := strings.Index(token[auth:auth+at], ":")
		if colon < 0 {
			return token[:auth] + Mark + token[auth+at:], true
		}
		return token[:auth+colon+1] + Mark + token[auth+at:], true
	}
	// Not a URL net/url reads: its userinfo is what RFC 3986 allows it
	// to be, the authority (up to the first "/", "?" or "#") before its
	// last "@"; a path or query holding "@" is no password.
	host := strings.IndexAny(token[auth:], "/?#")
	if host < 0 {
		host = len(token) - auth
	}
	at := strings.LastIndex(token[auth:auth+host], "@")
	if at < 0 {
		return token, false
	}
	return token[:auth] + Mark + token[auth+at:], true
}

// schemeChar: a character of a URL scheme (RFC 3986: ALPHA *( ALPHA /
// DIGIT / "+" / "-" / "." )).
func schemeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// urlEnds: a character no URL holds unencoded (RFC 3986: white space,
// '"', '<', '>', '`'); "'" may be in a password, so it ends only a URL it
// opened.
func urlEnds(c byte) bool {
	return c <= ' ' || c == '"' || c == '`' || c == '<' || c == '>'
}

// monitoringConfigs are the cluster monitoring operator's configuration
// ConfigMaps (openshift/cluster-monitoring-operator pkg/manifests/config.go:
// the platform's in openshift-monitoring, user workload monitoring's in
// openshift-user-workload-monitoring, each a YAML document under
// config.yaml).
var monitoringConfigs = map[[2]string]bool{
	{"openshift-monitoring", "cluster-monitoring-config"}:                     true,
	{"openshift-user-workload-monitoring", "user-workload-monitoring-config"}: true,
}

// monitoringConfig redacts, in a monitoring configuration c, the headers
// of every remote write endpoint (pkg/manifests/types.go RemoteWriteSpec:
// headers are sent with each request as given, an Authorization header
// among them) and any other header map, parsing the document: a document that does not parse is
// redacted whole, since what cannot be read is not let out.
func monitoringConfig(c *unstructured.Unstructured) bool {
	if c.GroupVersionKind().Group != "" || c.GetKind() != "ConfigMap" || !monitoringConfigs[[2]string{c.GetNamespace(), c.GetName()}] {
		return false
	}
	raw, ok, _ := unstructured.NestedString(c.Object, "data", "config.yaml")
	if !ok || !strings.Contains(raw, "headers") {
		return false
	}
	var doc any
	if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
		_ = unstructured.SetNestedField(c.Object, Mark, "data", "config.yaml")
		return true
	}
	if !headerMaps(doc) {
		return false
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		out = []byte(Mark)
	}
	_ = unstructured.SetNestedField(c.Object, string(out), "data", "config.yaml")
	return true
}

// headerFields are where the kinds the autopilot reads carry HTTP headers
// (a map of header names to string values, sent as given):
// observability.openshift.io/v1 ClusterLogForwarder's outputs
// (OutputSpec: http.headers and the other output types' headers), and
// logging.openshift.io/v1's before it.
var headerFields = []struct {
	group, kind string
	path        []string
}{
	{"observability.openshift.io", "ClusterLogForwarder", []string{"spec", "outputs"}},
	{"logging.openshift.io", "ClusterLogForwarder", []string{"spec", "outputs"}},
}

// headerMaps replaces the string values of every map under a "headers"
// key in v (a subtree where the vendor's API carries HTTP headers:
// headerFields, the monitoring configuration's remote write entries).
// Only string values: a header map holds nothing else, and anything
// else under that name is not one.
func headerMaps(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if h, ok := e.(map[string]any); ok && k == "headers" {
				for hk, hv := range h {
					if s, ok := hv.(string); ok && s != Mark {
						h[hk], changed = Mark, true
					}
				}
				continue
			}
			changed = headerMaps(e) || changed
		}
	case []any:
		for _, e := range t {
			changed = headerMaps(e) || changed
		}
	}
	return changed
}

// walkStrings replaces every string in v for which f reports a change.
func walkStrings(v any, f func(string) (string, bool)) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if s, ok := e.(string); ok {
				if n, ok := f(s); ok {
					t[k], changed = n, true
				}
				continue
			}
			changed = walkStrings(e, f) || changed
		}
	case []any:
		for i, e := range t {
			if s, ok := e.(string); ok {
				if n, ok := f(s); ok {
					t[i], changed = n, true
				}
				continue
			}
			changed = walkStrings(e, f) || changed
		}
	}
	return changed
}
