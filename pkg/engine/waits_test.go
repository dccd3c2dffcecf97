package engine_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// An asset whose render waits for the cluster (no default StorageClass)
// waits only while nothing it keeps from the live object answers: an
// existing LokiStack keeps its class and stays managed.
func TestWaitingRenderReadsTheLiveObjectFirst(t *testing.T) {
	ev, cat, _ := setup(t, nil)
	rc := newContext(map[string]string{"platform.kubevirt.io/enable-logging": "true"})
	rc.Topology.OpenShift = true
	a, _ := cat.Get("logging-lokistack")
	stack := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"storageClassName": "live-class", "size": "1x.small"}}}
	stack.SetAPIVersion("loki.grafana.com/v1")
	stack.SetKind("LokiStack")
	stack.SetNamespace("openshift-logging")
	stack.SetName("logging-loki")
	for name, c := range map[string]struct {
		live  liveMap
		want  engine.Verdict
		class string
	}{
		"no stack":       {liveMap{}, engine.VerdictMissingDependency, ""},
		"existing stack": {liveMap{"LokiStack/openshift-logging/logging-loki": stack}, engine.VerdictIncluded, "live-class"},
	} {
		d := ev.Evaluate(context.Background(), a, rc, c.live)
		if d.Verdict != c.want {
			t.Errorf("%s: %s (%s), want %s", name, d.Verdict, d.Reason, c.want)
			continue
		}
		if c.class != "" {
			if got, _, _ := unstructured.NestedString(d.Desired.Object, "spec", "storageClassName"); got != c.class {
				t.Errorf("%s: storageClassName %q, want %q", name, got, c.class)
			}
		}
	}
}

// The LokiStack's schema history is kept entry by entry, as the CRD
// admits each (a version of its enum, a date): nothing else of the live
// list is copied, so whoever wrote the live object (a facts file's author)
// chooses no other content; an entry the CRD would not admit fails the
// render, which writes nothing.
func TestLokiStackKeepsOnlyWhatTheSchemaAdmits(t *testing.T) {
	ev, cat, _ := setup(t, nil)
	rc := newContext(map[string]string{"platform.kubevirt.io/enable-logging": "true"})
	rc.Topology.OpenShift = true
	a, _ := cat.Get("logging-lokistack")
	stack := func(schemas []any) liveMap {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"storageClassName": "live-class",
			"storage": map[string]any{"schemas": schemas}}}}
		u.SetAPIVersion("loki.grafana.com/v1")
		u.SetKind("LokiStack")
		u.SetNamespace("openshift-logging")
		u.SetName("logging-loki")
		return liveMap{"LokiStack/openshift-logging/logging-loki": u}
	}
	kept := ev.Evaluate(context.Background(), a, rc, stack([]any{
		map[string]any{"version": "v12", "effectiveDate": "2022-06-01", "objectStorePrefix": "attacker/"},
		map[string]any{"version": "v13", "effectiveDate": "2024-10-01"},
	}))
	got, _, _ := unstructured.NestedSlice(kept.Desired.Object, "spec", "storage", "schemas")
	if want := []any{map[string]any{"version": "v12", "effectiveDate": "2022-06-01"}, map[string]any{"version": "v13", "effectiveDate": "2024-10-01"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("schemas %v, want %v", got, want)
	}
	for name, bad := range map[string]any{
		"a version the CRD does not list": map[string]any{"version": "v99", "effectiveDate": "2024-10-01"},
		"not a date":                      map[string]any{"version": "v13", "effectiveDate": "soon"},
		"not an entry":                    "v13",
	} {
		if d := ev.Evaluate(context.Background(), a, rc, stack([]any{bad})); d.Verdict != engine.VerdictFailed || d.Desired != nil {
			t.Errorf("%s: %s (%s)", name, d.Verdict, d.Reason)
		}
	}
}
