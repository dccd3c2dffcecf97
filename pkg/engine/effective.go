package engine

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// MergeApplied approximates, without a cluster, what a server-side apply of
// desired leaves on current: desired's fields win, maps merge, lists and
// scalars are replaced. The controller uses the API server's answer instead;
// offline renders use this so later assets see the effective HCO.
func MergeApplied(current, desired *unstructured.Unstructured) *unstructured.Unstructured {
	if current == nil {
		return desired.DeepCopy()
	}
	out := current.DeepCopy()
	mergeInto(out.Object, desired.DeepCopy().Object)
	return out
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
