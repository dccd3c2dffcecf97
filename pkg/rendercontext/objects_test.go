package rendercontext_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubevirt/virt-platform-autopilot/pkg/rendercontext"
)

func TestLookup(t *testing.T) {
	rule := rendercontext.ObjectKey{GVK: schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, Namespace: "ns", Name: "r"}
	gone := rendercontext.ObjectKey{GVK: rule.GVK, Namespace: "ns", Name: "gone"}
	broken := rendercontext.ObjectKey{GVK: rule.GVK, Namespace: "ns", Name: "broken"}
	rc := rendercontext.New(rendercontext.Facts{Observed: rendercontext.Observed{
		Objects:    map[rendercontext.ObjectKey]*unstructured.Unstructured{rule: {Object: map[string]any{"spec": "x"}}, gone: nil},
		ObjectErrs: map[rendercontext.ObjectKey]error{broken: errors.New("forbidden")},
	}})
	if got, err := rc.Lookup("monitoring.coreos.com/v1", "PrometheusRule", "ns", "r"); err != nil || got["spec"] != "x" {
		t.Fatalf("declared, present: %v %v", got, err)
	}
	if got, err := rc.Lookup("monitoring.coreos.com/v1", "PrometheusRule", "ns", "gone"); err != nil || got != nil {
		t.Fatalf("declared, absent: %v %v", got, err)
	}
	if _, err := rc.Lookup("monitoring.coreos.com/v1", "PrometheusRule", "ns", "broken"); err == nil {
		t.Fatal("a failed read must fail the render, never read as absent")
	}
	if _, err := rc.Lookup("monitoring.coreos.com/v1", "PrometheusRule", "ns", "other"); err == nil {
		t.Fatal("an undeclared object must be an error")
	}
}

func TestImagesFromEnv(t *testing.T) {
	got := rendercontext.ImagesFromEnv([]string{"RELATED_IMAGE_KUBEVIRT_METRICS_EXPORTER=quay.io/x@sha256:1", "RELATED_IMAGE_EMPTY=", "PATH=/bin"})
	if len(got) != 1 || got["kubevirt-metrics-exporter"] != "quay.io/x@sha256:1" {
		t.Fatalf("images: %v", got)
	}
}
