package objyaml

import (
	"reflect"
	"testing"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

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
		want, wantErr := DecodeJSONRoute([]byte(doc))
		got, ok := Decode([]byte(doc))
		if !ok {
			jsonRoute++
			continue // the caller takes the JSON route: equal by construction
		}
		if wantErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nfast %#v\njson %#v (%v)", extra, got, want, wantErr)
		}
		roundTrip(t, got)
	}
	// Those with a NaN, an integer beyond int64, or colliding keys.
	if jsonRoute != 3 {
		t.Errorf("%d documents took the JSON route, want 3", jsonRoute)
	}
	if _, ok := Decode([]byte("- a\n- b\n")); ok {
		t.Error("a sequence document must take the JSON route (not an object)")
	}
}

// roundTrip: what Marshal writes reads back, through sigs.k8s.io/yaml and
// the API machinery as kubectl would, to exactly obj.
func roundTrip(t *testing.T, obj map[string]any) {
	t.Helper()
	y, err := Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	js, err := yaml.YAMLToJSON(y)
	if err == nil {
		err = utiljson.Unmarshal(js, &back)
	}
	if err != nil || !reflect.DeepEqual(back, obj) {
		t.Errorf("%#v\nwrites\n%s\nwhich reads back as\n%#v (%v)", obj, y, back, err)
	}
}

// Every string a reader could take for something else is quoted, every
// multi-line one reads back whole.
func TestMarshalRoundTrips(t *testing.T) {
	strs := []string{
		"", " ", "a", "a b", "yes", "Yes", "NO", "on", "Off", "y", "n", "true", "null", "~", "Null",
		"1", "1.5", "-1", "+1", "0x1F", "0o17", "017", "1e3", "1_000", "1:20", "12:30:45", "2002-12-14", ".inf", ".NaN", "-.inf",
		"10Gi", "1.5Gi", "100m", "30s", "1E", "3Mi ", "=", "<<", "-", "--", "---", "...", "- a", "? x", ": x", "a: b", "a:b", "a #b", "a#b",
		"#c", "&a", "*a", "!t", "|", ">", "'q'", "\"q\"", "%p", "@x", "`x", "{a}", "[a]", "a,b", "a, b", "http://x:8080/p?q=1&r=2",
		"line\n", "line", "two\nlines", "two\nlines\n", "keep\n\n", "keep\n\n\n", "\nlead", " lead\nx", "tab\tin", "\tlead\nx",
		"trail \nx", "a\n  indented\nb", "a\r\nb", "nel\u0085x", "ls\u2028x", "bom\ufeffx", "ctrl\x01x", "ünï cödé", "emoji 🚀",
		"{{namespace}}/{{name}}", "$__rate_interval", "sum by (a) (rate(x[5m]))", "kubevirt.io/schedulable=true",
	}
	for _, str := range strs {
		roundTrip(t, map[string]any{"k": str, str: "v", "l": []any{str, map[string]any{str: str}}})
	}
	roundTrip(t, map[string]any{
		"n": nil, "b": true, "i": int64(-3), "f": 0.25, "g": 1.5e-07, "h": 6.02e+23,
		"empty": map[string]any{}, "none": []any{},
		"nested": []any{[]any{"a", []any{}}, map[string]any{"x": []any{map[string]any{"y": map[string]any{}}}}, []any{map[string]any{"a": int64(1), "b": int64(2)}}},
	})
}

// What the direct route cannot write the same takes the JSON route.
func TestMarshalUnusualValues(t *testing.T) {
	for _, obj := range []map[string]any{
		{"f": 2.0, "g": 1e21, "h": 0.5},
		{"s": "bad \xff utf-8", "n": int32(3)},
		{"m": map[string]any(nil), "s": []any(nil), "x": map[string]any{"y": []any{map[string]any(nil)}}},
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

// Any string, as a key, a value and in a list, reads back as written.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{"a", "yes", "10Gi", "two\nlines\n", "\tx\ny", "nel\u0085", "a: b", "- x", "{{x}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > maxKey {
			return // written by sigs.k8s.io/yaml, not this writer
		}
		roundTrip(t, map[string]any{"k": s, s: "v", "l": []any{s, map[string]any{s: s}}})
	})
}
