package engine_test

import (
	"context"
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
