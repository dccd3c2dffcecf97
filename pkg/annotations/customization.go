package annotations

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

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

// PatchAccepted is the patch annotation's vocabulary.
const PatchAccepted = `an RFC 6902 JSON patch: a list of {op, path, value|from} operations, as JSON or YAML (as kubectl patch --type=json takes it), no path under apiVersion, kind, status or server-owned metadata`

// IgnoreFieldsAccepted is the ignore-fields annotation's vocabulary.
const IgnoreFieldsAccepted = `RFC 6901 JSON pointers (a list element by index or by key, /spec/list/name=x), separated by commas and/or newlines, none under apiVersion, kind, status or server-owned metadata`

// ParsePatch decodes and checks the patch annotation's value.
func ParsePatch(value string) (jsonpatch.Patch, error) {
	invalid := func(err error) error {
		return &Invalid{Annotation: Patch, Value: value, Accepted: PatchAccepted, Detail: err.Error(), Err: err}
	}
	doc := []byte(value)
	if t := strings.TrimSpace(value); !strings.HasPrefix(t, "[") {
		// A YAML list (a GitOps block scalar); JSON is taken as written.
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, invalid(fmt.Errorf("neither JSON nor YAML: %w", err))
		}
		doc = j
	}
	patch, err := jsonpatch.DecodePatch(doc)
	if err == nil && patch == nil {
		err = errors.New("empty") // "", "null": "[]" is the empty patch
	}
	if err != nil {
		return nil, invalid(fmt.Errorf("not a list of patch operations: %w", err))
	}
	for i, op := range patch {
		for _, field := range []string{"path", "from"} {
			raw, ok := op[field]
			if !ok || raw == nil {
				if field == "path" {
					return nil, invalid(fmt.Errorf("operation %d: missing path", i))
				}
				continue
			}
			var s string
			if err := json.Unmarshal(*raw, &s); err != nil {
				return nil, invalid(fmt.Errorf("operation %d: %s is not a string", i, field))
			}
			if s == "" {
				return nil, invalid(fmt.Errorf("operation %d: %s may not replace the whole object", i, field))
			}
			p, err := jsonpointer.Parse(s)
			if err != nil {
				return nil, invalid(fmt.Errorf("operation %d: %w", i, err))
			}
			if err := checkProtected(p, fmt.Sprintf("operation %d: %s %s", i, field, s)); err != nil {
				return nil, invalid(err)
			}
		}
	}
	return patch, nil
}

// ParseIgnoreFields decodes the ignore-fields list. In a list, a token
// "key=value" (e.g. /spec/featureGates/name=Foo/state) addresses the
// element whose key field equals value; a numeric token addresses by index.
func ParseIgnoreFields(value string) ([]jsonpointer.Pointer, error) {
	var out []jsonpointer.Pointer
	for _, s := range SplitList(value) {
		p, err := jsonpointer.Parse(s)
		if err == nil {
			err = checkProtected(p, "pointer "+s)
		}
		if err != nil {
			return nil, &Invalid{Annotation: IgnoreFields, Value: value, Accepted: IgnoreFieldsAccepted, Detail: err.Error(), Err: err}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkProtected refuses a pointer that is, contains or lies inside a
// protected path.
func checkProtected(p jsonpointer.Pointer, what string) error {
	for _, q := range protected {
		if p.HasPrefix(q) || q.HasPrefix(p) {
			return fmt.Errorf("%s covers the object's identity, status or server metadata (%s): %w", what, q, ErrProtected)
		}
	}
	return nil
}
