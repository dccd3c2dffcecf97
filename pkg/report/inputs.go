package report

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
	"github.com/kubevirt/virt-platform-autopilot/pkg/metrics"
	"github.com/kubevirt/virt-platform-autopilot/pkg/shipped"
)

// Notices reports what on the HCO the autopilot does not act on as
// written: one metric series per (annotation, reason) and one Event per
// Event reason and episode, in the HCO-input key space (an outcome
// recorded on the HCO object itself, the golden config's, never clears it).
func (r *Reporter) Notices(ctx context.Context, hco *unstructured.Unstructured, notices []engine.Notice) {
	byEvent := map[string][]string{}
	var fresh []series
	for _, n := range notices {
		byEvent[n.Event] = append(byEvent[n.Event], n.Message)
		fresh = append(fresh, series{metrics.InvalidAnnotation, []string{hco.GetKind(), hco.GetNamespace(), hco.GetName(), n.Annotation, string(n.Reason)}})
	}
	r.mu.Lock()
	old := r.series[hcoInputSeries]
	r.series[hcoInputSeries] = fresh
	r.mu.Unlock()
	for _, s := range old {
		s.vec.DeleteLabelValues(s.labels...)
	}
	for _, s := range fresh {
		s.vec.WithLabelValues(s.labels...).Set(1)
	}
	for _, reason := range noticeEvents {
		msgs := byEvent[reason]
		if len(msgs) == 0 {
			r.forgetInputEvent(hco, reason)
			continue
		}
		msg := strings.Join(msgs, "; ")
		if r.inputEventOnce(hco, reason, msg) {
			log.FromContext(ctx).Info("HCO input not understood", "action", "invalid", "object", engine.ObjectKey(hco), "reason", reason, "detail", msg)
		}
	}
}

// noticeEvents are the Event reasons of engine.Evaluator.Notices.
var noticeEvents = []string{"InvalidDisabledResources", "InvalidAutopilot", "InvalidSwitch", "UnknownAnnotation", "ShippedAutopilotSwitch", "HCODeploysWasp", "FeatureGatesUnreadable", "InvalidDisruptionWindow", "InvalidYieldTo"}

// Activation reports the HCO's platform.kubevirt.io/autopilot switch:
// paused is idle (log, metric, /debug/health) with one Event. (Entries
// naming nothing are a notice: Notices.)
func (r *Reporter) Activation(ctx context.Context, hco *unstructured.Unstructured, act engine.Activation) {
	if act.ReportOnly {
		r.inputEventOnce(hco, "ReportOnly", fmt.Sprintf("report-only by HCO annotation %s=%q: every asset is evaluated and compared as if applied, and reported Drifted or compliant; nothing is written or deleted until it changes", annotations.Autopilot, act.Value))
	} else {
		r.forgetInputEvent(hco, "ReportOnly")
	}
	r.shipped(hco, act.Beside)
	if !act.Paused {
		r.forgetInputEvent(hco, "Paused")
		if act.Beside.Holds() {
			r.Idle(ctx, IdleStatus{Reason: IdleBesideShipped, Message: act.Beside.Reason})
			return
		}
		r.Idle(ctx, IdleStatus{})
		return
	}
	msg := fmt.Sprintf("paused by HCO annotation %s=%q: nothing is written or deleted until it is removed, \"true\", or lists assets", annotations.Autopilot, act.Value)
	r.Idle(ctx, IdleStatus{Reason: IdlePaused, Message: msg})
	r.inputEventOnce(hco, "Paused", msg)
}

// inputEventOnce records a warning about the HCO's inputs (its
// annotations, the activation switch) once per episode. Its dedup state
// has its own key space: outcomes recorded on the HCO object as the golden
// config's target never clear it.
func (r *Reporter) inputEventOnce(hco *unstructured.Unstructured, reason, msg string) bool {
	k := inputKey(hco, reason)
	r.mu.Lock()
	same := r.lastEvent[k] == msg
	r.lastEvent[k] = msg
	r.mu.Unlock()
	if !same {
		r.event(hco, nil, corev1.EventTypeWarning, reason, msg)
	}
	return !same
}

// forgetInputEvent ends an HCO-input warning's episode.
func (r *Reporter) forgetInputEvent(hco *unstructured.Unstructured, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lastEvent, inputKey(hco, reason))
}

func inputKey(hco *unstructured.Unstructured, reason string) string {
	return "input\x00" + engine.ObjectKey(hco) + "|" + reason
}

// ShippedEvent is the Event reason saying that the autopilot OpenShift
// Virtualization ships holds this one's writes.
const ShippedEvent = "ShippedAutopilot"

// shipped reports the autopilot OpenShift Virtualization ships: its state
// as a metric and in /debug/health, and while it holds this one's writes
// one Event per episode (the message says how to hand over).
func (r *Reporter) shipped(hco *unstructured.Unstructured, v shipped.Verdict) {
	for _, s := range shipped.States {
		g := 0.0
		if s == v.State {
			g = 1
		}
		metrics.ShippedAutopilot.WithLabelValues(string(s)).Set(g)
	}
	r.mu.Lock()
	r.beside = v
	r.mu.Unlock()
	if v.Holds() {
		r.inputEventOnce(hco, ShippedEvent, v.Reason)
		return
	}
	r.forgetInputEvent(hco, ShippedEvent)
}
