// Package fleetstatus keeps a status a fleet can read without a new API:
// the ConfigMap virt-platform-autopilot-status in the autopilot's own
// namespace, holding per feature its state, reason and compliance, the
// features that need attention, and the autopilot's version. It is a
// read-only contract (docs/fleet.md): hubs (RHACM policies, Argo CD health
// checks) read it; the autopilot alone writes it, only when a feature's
// state or compliance (or the version) changes, so steady state costs
// nothing.
package fleetstatus

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/features"
)

// Name is the ConfigMap's name.
const Name = "virt-platform-autopilot-status"

// Keys of the ConfigMap's data; per feature "<feature>.state",
// "<feature>.reason" and "<feature>.compliance".
const (
	KeyVersion = "version"
	// KeyAttention lists the features degraded or drifted, comma separated.
	KeyAttention = "attention"
	// KeyHealthy is "true" when none is, else "false": one key a policy
	// can require.
	KeyHealthy = "healthy"
)

// Compliance of a feature, as a fleet reads it.
const (
	// Compliant: on, and every asset as the autopilot applies it.
	Compliant = "Compliant"
	// Drifted: report-only, and an asset differs from what would be applied.
	Drifted = "Drifted"
	// NotApplicable: off, not applicable, excluded or paused.
	NotApplicable = "NotApplicable"
	// Unknown: degraded or waiting: whether it is as it should be cannot be said.
	Unknown = "Unknown"
)

// maxReason bounds a reason in the ConfigMap.
const maxReason = 512

// Data is the ConfigMap's data for statuses and version.
func Data(statuses []features.Status, version string) map[string]string {
	out := map[string]string{KeyVersion: version}
	var attention []string
	for _, s := range statuses {
		out[s.Name+".state"] = string(s.State)
		r := s.Reason
		if len(r) > maxReason {
			r = r[:maxReason] + "..."
		}
		out[s.Name+".reason"] = r
		out[s.Name+".compliance"] = compliance(s.State)
		if s.State == features.Degraded || s.State == features.Drifted {
			attention = append(attention, s.Name)
		}
	}
	sort.Strings(attention)
	out[KeyAttention] = strings.Join(attention, ",")
	out[KeyHealthy] = fmt.Sprint(len(attention) == 0)
	return out
}

func compliance(s features.State) string {
	switch s {
	case features.Active:
		return Compliant
	case features.Drifted:
		return Drifted
	case features.Off, features.NotApplicable, features.Excluded, features.Paused:
		return NotApplicable
	}
	return Unknown
}

// Writer keeps the ConfigMap current. It is safe for concurrent use.
type Writer struct {
	// Reader reads the ConfigMap once, uncached (the autopilot's cache
	// holds only its managed objects); Client writes it.
	Reader    client.Reader
	Client    client.Client
	Namespace string
	Version   string

	mu   sync.Mutex
	last map[string]string // what the ConfigMap holds, as last read or written
}

// Write sets the ConfigMap to statuses when a state, a compliance or the
// version differs from what it holds (reasons alone never cause a
// write); changed says whether it wrote. The first call reads the
// ConfigMap, so a restart does not rewrite an unchanged one.
func (w *Writer) Write(ctx context.Context, statuses []features.Status) (changed bool, err error) {
	data := Data(statuses, w.Version)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		cm := &corev1.ConfigMap{}
		err := w.Reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: Name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			w.last = map[string]string{}
		case err != nil:
			return false, fmt.Errorf("read ConfigMap %s/%s: %w", w.Namespace, Name, err)
		default:
			w.last = cm.Data
			if w.last == nil {
				w.last = map[string]string{}
			}
		}
	}
	if maps.EqualFunc(withoutReasons(w.last), withoutReasons(data), func(a, b string) bool { return a == b }) {
		return false, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": Name, "namespace": w.Namespace,
			"labels": map[string]any{"app.kubernetes.io/name": "virt-platform-autopilot", "app.kubernetes.io/component": "fleet-status"}},
		"data": toAny(data),
	}}
	if err := w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(annotations.FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("write ConfigMap %s/%s: %w", w.Namespace, Name, err)
	}
	w.last = data
	return true, nil
}

func withoutReasons(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !strings.HasSuffix(k, ".reason") {
			out[k] = v
		}
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
