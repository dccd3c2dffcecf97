package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// A stop outlasts client-go's longest uninterruptible backoff and ends
// before the kubelet kills the pod. client-go tools/cache/reflector.go:
// defaultBackoffMax 30s, defaultBackoffJitter 1.0 (wait.Jitter adds up
// to the whole duration again), slept by Reflector.watchList without
// watching the stop.
func TestShutdownFitsBetweenClientGoBackoffAndKubelet(t *testing.T) {
	const longestBackoff = 30 * time.Second * 2
	if ShutdownTimeout <= longestBackoff {
		t.Errorf("ShutdownTimeout %s does not outlast a %s backoff", ShutdownTimeout, longestBackoff)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	// The lease is released after the runnables end; leave it time.
	if grace == nil || time.Duration(*grace)*time.Second < ShutdownTimeout+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v: the kubelet kills the pod before the manager's %s stop deadline", grace, ShutdownTimeout)
	}
}
