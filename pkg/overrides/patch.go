// Package overrides applies a user's customizations of a managed object to
// its rendered baseline: the JSON patch annotation and the ignore-fields mask.
package overrides

import (
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

// ErrDoesNotApply marks a valid patch or mask that cannot be applied to the
// rendered object.
var ErrDoesNotApply = errors.New("does not apply")

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
		return nil, fmt.Errorf("patch changed the object's identity: %w", annotations.ErrProtected)
	}
	return res, nil
}
