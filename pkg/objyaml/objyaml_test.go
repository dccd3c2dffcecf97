package objyaml

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// viaJSON is the route Decode stands in for.
func viaJSON(t *testing.T, doc string) (map[string]any, error) {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	return u.Object, nil
}

func TestDecodeEqualsTheJSONRoute(t *testing.T) {
	base := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	jsonRoute := 0
	for _, extra := range []string{
		"data:\n  a: yes\n  b: \"yes\"\n  c: on\n  d: ~\n  e: null\n",
		"spec:\n  i: 3\n  f: 1.5\n  g: 1.0\n  h: -0.0\n  j: 1e3\n  k: 2.5e-7\n  l: 9223372036854775807\n  m: -9223372036854775808\n",
		"spec:\n  big: 18446744073709551615\n  huge: 1e21\n  mid: 9.3e18\n  inf: .inf\n  nan: .NaN\n",
		"spec:\n  1: one\n  true: t\n  1.5: f\n",
		"spec:\n  \"1\": a\n  1: b\n",
		"spec:\n  list: [1, \"2\", 3.0, {a: b}, [x]]\n  empty: {}\n  none: []\n",
		"spec:\n  anchor: &a {x: 1}\n  ref: *a\n  merged:\n    <<: *a\n    y: 2\n",
		"spec:\n  ts: 2001-12-14t21:59:43.10-05:00\n  date: 2002-12-14\n  bin: !!binary aGVsbG8=\n",
		"spec:\n  text: |\n    multi\n    line\n  folded: >\n    a\n    b\n",
		"spec:\n  octal: 0755\n  hex: 0x1F\n  under: 1_000\n  plus: +12\n",
	} {
		doc := base + extra
		want, wantErr := viaJSON(t, doc)
		got, ok := Decode([]byte(doc))
		if !ok {
			jsonRoute++
			continue // the caller takes the JSON route: equal by construction
		}
		if wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nfast %#v\njson %#v (%v)", extra, got, want, wantErr)
		}
		wantYAML, _ := yaml.Marshal(want)
		if gotYAML, err := Marshal(got); err != nil || string(gotYAML) != string(wantYAML) {
			t.Errorf("%q: writes\n%s\nwant\n%s", extra, gotYAML, wantYAML)
		}
	}
	// Those with a NaN, an integer beyond int64, or colliding keys.
	if jsonRoute != 3 {
		t.Errorf("%d documents took the JSON route, want 3", jsonRoute)
	}
	if _, ok := Decode([]byte("- a\n- b\n")); ok {
		t.Error("a sequence document must take the JSON route (not an object)")
	}
}

// What the direct route cannot write the same takes the JSON route.
func TestMarshalUnusualValues(t *testing.T) {
	for _, obj := range []map[string]any{
		{"f": 2.0, "g": 1e21, "h": 0.5},
		{"s": "bad \xff utf-8", "n": int32(3)},
		{"nested": map[string]any{"list": []any{int64(1), 2.0, "x", nil, true}}},
		{"a10": 1, "a9": 2, "b": map[string]any{}, "c": []any{}},
	} {
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(obj)
		if err != nil || string(got) != string(want) {
			t.Errorf("%v: writes\n%s\nwant\n%s", obj, got, want)
		}
	}
}
