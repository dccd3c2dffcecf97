package overrides

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-platform-autopilot/pkg/jsonpointer"
	"github.com/kubevirt/virt-platform-autopilot/pkg/managedfields"
)

// ParseIgnoreFields decodes the comma-separated pointer list.
func ParseIgnoreFields(value string) ([]jsonpointer.Pointer, error) {
	var out []jsonpointer.Pointer
	for _, raw := range strings.Split(value, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		p, err := jsonpointer.Parse(s)
		if err != nil {
			return nil, err
		}
		for _, q := range protected {
			if p.HasPrefix(q) || q.HasPrefix(p) {
				return nil, fmt.Errorf("pointer %s covers the object's identity, status or server metadata: %w", s, ErrProtected)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Mask makes desired keep live's value at every pointer, so applying it never
// reverts a user-owned field. Server-side apply deletes fields a manager
// stops sending unless another manager co-owns them, so per pointer:
//   - absent on live: dropped from desired (the user removed it);
//   - owned by another manager: dropped from desired, so the autopilot
//     gives up ownership and never co-owns a user's field;
//   - otherwise (only the autopilot, or nobody, owns it, or it sits in a
//     list, which the autopilot owns whole): live's value is adopted.
//
// desired is modified in place.
func Mask(desired, live *unstructured.Unstructured, pointers []jsonpointer.Pointer, self string) error {
	for _, p := range pointers {
		v, ok := jsonpointer.Get(live.Object, p)
		if !ok {
			jsonpointer.Delete(desired.Object, p)
			continue
		}
		if !inList(live.Object, p) && len(managedfields.Owners(live, p, self)) > 0 {
			jsonpointer.Delete(desired.Object, p)
			continue
		}
		if err := jsonpointer.Set(desired.Object, p, runtime.DeepCopyJSONValue(v)); err != nil {
			return fmt.Errorf("ignore-fields %s %w: %w", p, ErrDoesNotApply, err)
		}
	}
	return nil
}

func inList(doc map[string]any, p jsonpointer.Pointer) bool {
	for i := range p {
		if v, ok := jsonpointer.Get(doc, p[:i]); ok {
			if _, isList := v.([]any); isList {
				return true
			}
		}
	}
	return false
}
