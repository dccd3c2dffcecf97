package report

import (
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
)

func (r *Reporter) metricsFor(d *engine.Decision, res engine.Result, target *unstructured.Unstructured) {
	name := d.Asset.Name
	for _, o := range engine.Outcomes {
		v := 0.0
		if o == res.Outcome {
			v = 1
		}
		metrics.AssetOutcome.WithLabelValues(name, string(o)).Set(v)
	}
	if res.Outcome == engine.Applied {
		metrics.CorrectiveWrites.WithLabelValues(target.GetKind(), target.GetNamespace(), target.GetName()).Inc()
	}
	// A write that waits (staged, settling) finds the same drift on every
	// reconcile: it is counted when the write goes, not each time.
	waiting := res.Outcome == engine.Staged || res.Outcome == engine.Settling
	if len(res.Drift) > 0 && d.Live != nil && !waiting {
		confirmed := "true"
		if res.Outcome == engine.Unchanged {
			confirmed = "false"
		}
		metrics.DriftDetected.WithLabelValues(target.GetKind(), target.GetNamespace(), target.GetName(), confirmed).Inc()
	}

	// Per-object series carry labels that change; drop the asset's old ones.
	r.mu.Lock()
	old := r.series[name]
	delete(r.series, name)
	r.mu.Unlock()
	for _, s := range old {
		s.vec.DeleteLabelValues(s.labels...)
	}
	var fresh []series
	switch {
	case res.Outcome == engine.Invalid && target != nil:
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{target.GetKind(), target.GetNamespace(), target.GetName(), engine.InvalidAnnotation(d, res), string(engine.InvalidReasonOf(d, res))}})
	case res.Outcome == engine.Throttled && target != nil:
		fresh = append(fresh, series{metrics.Throttled, []string{target.GetKind(), target.GetNamespace(), target.GetName(), strings.Join(res.Opponents, ",")}})
	case res.Outcome == engine.MissingDependency && d.Rendered != nil:
		fresh = append(fresh, series{metrics.MissingDependency, []string{name, d.Rendered.GetKind()}})
	}
	if len(d.Unresolved) > 0 && target != nil {
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{target.GetKind(), target.GetNamespace(), target.GetName(), annotations.IgnoreFields, string(engine.UnresolvedPointer)}})
	}
	if target != nil {
		for _, m := range deferredManagers(d.Deferred) {
			fresh = append(fresh, series{metrics.Deferred, []string{target.GetKind(), target.GetNamespace(), target.GetName(), m}})
		}
		for _, c := range d.Customizations {
			fresh = append(fresh, series{metrics.Customization, []string{name, target.GetKind(), target.GetNamespace(), target.GetName(), c}})
		}
	}
	for _, s := range fresh {
		s.vec.WithLabelValues(s.labels...).Set(1)
	}
	if d.ReportOnly && (res.Outcome == engine.Unchanged || res.Outcome == engine.Drifted) {
		c := series{metrics.Compliance, []string{name, d.Asset.Feature}}
		v := 1.0
		if res.Outcome == engine.Drifted {
			v = 0
		}
		c.vec.WithLabelValues(c.labels...).Set(v)
		fresh = append(fresh, c)
	}
	r.mu.Lock()
	r.series[name] = fresh
	r.mu.Unlock()
}

// series is one per-object gauge series an asset set.
type series struct {
	vec    *prometheus.GaugeVec
	labels []string
}

// hcoInputSeries keys the HCO-input metric series (no asset has this name).
const hcoInputSeries = "\x00hco-inputs"

// deferredManagers are the managers deferred to, once each, sorted.
func deferredManagers(deferred []engine.Deferral) []string {
	var out []string
	for _, d := range deferred {
		out = append(out, d.Managers...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
