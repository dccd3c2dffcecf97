// Package overrides applies a user's customizations of a managed object to
// its rendered baseline: the JSON patch annotation and the ignore-fields mask.
package overrides

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
)

// protected are the paths a user patch or mask may not touch, or contain
// (checked by prefix in both directions, so "/metadata" as a whole is
// refused too): identity, status, and metadata the server or other
// controllers own. Changing them would apply a different object, fight the
// API server, or block or cascade a deletion.
var protected = []jsonpointer.Pointer{
	{"apiVersion"}, {"kind"}, {"status"},
	{"metadata", "name"}, {"metadata", "generateName"}, {"metadata", "namespace"}, {"metadata", "uid"},
	{"metadata", "resourceVersion"}, {"metadata", "managedFields"},
	{"metadata", "generation"}, {"metadata", "creationTimestamp"},
	{"metadata", "deletionTimestamp"}, {"metadata", "deletionGracePeriodSeconds"},
	{"metadata", "finalizers"}, {"metadata", "ownerReferences"}, {"metadata", "selfLink"},
}

// ErrProtected marks a patch or pointer that touches a protected path.
var ErrProtected = errors.New("protected path")

// ErrDoesNotApply marks a valid patch or mask that cannot be applied to the
// rendered object.
var ErrDoesNotApply = errors.New("does not apply")

// ParsePatch decodes and checks an RFC 6902 patch annotation value.
func ParsePatch(value string) (jsonpatch.Patch, error) {
	patch, err := jsonpatch.DecodePatch([]byte(value))
	if err != nil {
		return nil, fmt.Errorf("not an RFC 6902 JSON patch array: %w", err)
	}
	for i, op := range patch {
		for _, field := range []string{"path", "from"} {
			raw, ok := op[field]
			if !ok || raw == nil {
				if field == "path" {
					return nil, fmt.Errorf("operation %d: missing path", i)
				}
				continue
			}
			var s string
			if err := json.Unmarshal(*raw, &s); err != nil {
				return nil, fmt.Errorf("operation %d: %s is not a string", i, field)
			}
			if s == "" {
				return nil, fmt.Errorf("operation %d: %s may not replace the whole object", i, field)
			}
			p, err := jsonpointer.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("operation %d: %w", i, err)
			}
			if err := checkProtected(p, fmt.Sprintf("operation %d: %s %s", i, field, s)); err != nil {
				return nil, err
			}
		}
	}
	return patch, nil
}

// ApplyPatch returns obj with patch applied; obj is not modified.
func ApplyPatch(obj *unstructured.Unstructured, patch jsonpatch.Patch) (*unstructured.Unstructured, error) {
	doc, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out, err := patch.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{EnsurePathExistsOnAdd: true, AllowMissingPathOnRemove: false, SupportNegativeIndices: true, AccumulatedCopySizeLimit: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("patch %w to the rendered object: %w", ErrDoesNotApply, err)
	}
	res := &unstructured.Unstructured{}
	if err := res.UnmarshalJSON(out); err != nil {
		return nil, fmt.Errorf("patched object is invalid: %w", err)
	}
	if res.GetAPIVersion() != obj.GetAPIVersion() || res.GetKind() != obj.GetKind() ||
		res.GetName() != obj.GetName() || res.GetNamespace() != obj.GetNamespace() {
		return nil, fmt.Errorf("patch changed the object's identity: %w", ErrProtected)
	}
	return res, nil
}
