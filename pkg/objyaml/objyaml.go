// Package objyaml converts between YAML and API objects as the API
// machinery holds them (map[string]any with int64, float64, string, bool,
// nil, []any), directly. sigs.k8s.io/yaml goes through JSON both ways,
// which was most of an offline render's time; these functions give the
// same result and say when they cannot (ok false, or the JSON route used),
// so callers keep that route for the unusual cases.
package objyaml

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Decode decodes one YAML document into the object the JSON route
// (sigs.k8s.io/yaml to JSON, then the API machinery's JSON decoder) yields,
// without writing and reading the JSON: integers as int64, other numbers
// as float64, keys as strings. Anything that route treats specially (a
// non-string key that could collide, an integer beyond int64, NaN or
// infinity, invalid UTF-8, a document that is not a mapping) reports ok
// false, and the caller takes the JSON route.
func Decode(doc []byte) (obj map[string]any, ok bool) {
	var v any
	if err := yamlv2.Unmarshal(doc, &v); err != nil {
		return nil, false
	}
	out, ok := jsonable(v)
	if !ok {
		return nil, false
	}
	obj, ok = out.(map[string]any)
	return obj, ok
}

// DecodeJSONRoute decodes one YAML document the way Decode stands in for:
// sigs.k8s.io/yaml to JSON, then the API machinery's JSON decoder. It is
// the route for what Decode reports it cannot take.
func DecodeJSONRoute(doc []byte) (map[string]any, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	return u.Object, nil
}

func jsonable(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case int:
		return int64(t), true
	case int64:
		return t, true
	case uint64:
		if t > math.MaxInt64 {
			return nil, false
		}
		return int64(t), true
	case float64:
		return number(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			var ok bool
			if out[i], ok = jsonable(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			var key string
			switch kt := k.(type) {
			case string:
				key = kt
			case int:
				key = strconv.Itoa(kt)
			case bool:
				key = strconv.FormatBool(kt)
			default:
				return nil, false
			}
			if _, dup := out[key]; dup {
				return nil, false
			}
			val, ok := jsonable(e)
			if !ok {
				return nil, false
			}
			out[key] = val
		}
		return out, true
	}
	return nil, false
}

// number is what encoding/json writes for f and the API machinery reads
// back: an integral value written without exponent (|f| < 1e21) that fits
// int64 comes back as int64.
func number(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), true
		}
		return nil, false
	}
	return f, true
}

// Marshal writes obj as block YAML that reads back (sigs.k8s.io/yaml, the
// API machinery, Decode) to exactly obj: keys sorted, a multi-line string
// as a literal block, a string quoted whenever a YAML 1.1 reader could
// take it for anything else. An object holding other than the API
// machinery's types is written by sigs.k8s.io/yaml.
func Marshal(obj map[string]any) ([]byte, error) {
	out, err := MarshalAll(obj)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// MarshalAll writes each object as Marshal does, all by the same writer:
// objects compared line by line (a diff) differ only where they differ.
func MarshalAll(objs ...map[string]any) ([][]byte, error) {
	own := true
	for _, o := range objs {
		own = own && plain(o)
	}
	out := make([][]byte, len(objs))
	for i, o := range objs {
		if !own {
			y, err := yaml.Marshal(o)
			if err != nil {
				return nil, err
			}
			out[i] = y
			continue
		}
		w := &writer{}
		w.mapping(o, 0)
		out[i] = w.b.Bytes()
	}
	return out, nil
}

const maxKey = 128

// plain reports whether v holds only what JSON would write back unchanged,
// with keys Marshal's writer can write.
func plain(v any) bool {
	switch t := v.(type) {
	case nil, bool, int64:
		return true
	case string:
		return utf8.ValidString(t)
	case float64:
		// An integral float is written by JSON as an integer.
		return !math.IsNaN(t) && !math.IsInf(t, 0) && t != math.Trunc(t)
	case []any:
		for _, e := range t {
			if !plain(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range t {
			// YAML bounds an implicit key at 1024 characters; a long key
			// (quoted, six per escaped byte) is left to yaml.v2's "? key".
			if len(k) > maxKey || !plain(e) {
				return false
			}
		}
		return true
	}
	return false
}
