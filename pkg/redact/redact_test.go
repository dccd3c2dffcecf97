package redact

import (
	"encoding/json"
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
		"url inside a longer string": `{apiVersion: v1, kind: ConfigMap, metadata: {name: cluster-monitoring-config},
			data: {config.yaml: "prometheusK8s:\n  remoteWrite:\n  - url: https://writer:secret-plant@metrics.example.com/api\n", args: "--url=https://u:secret-plant@h --other"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			in := obj(t, y)
			before, _ := json.Marshal(in.Object)
			out := Object(in)
			after, _ := json.Marshal(out.Object)
			if strings.Contains(string(after), "secret-plant") || strings.Contains(string(after), "c2VjcmV0LXBsYW50") {
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
