package jsonpointer

import (
	"reflect"
	"testing"
)

func TestParseAndString(t *testing.T) {
	p, err := Parse("/metadata/annotations/a~1b~0c/0")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Pointer{"metadata", "annotations", "a/b~c", "0"}); !reflect.DeepEqual(p, want) {
		t.Fatalf("got %q", p)
	}
	if p.String() != "/metadata/annotations/a~1b~0c/0" {
		t.Fatalf("round trip: %s", p)
	}
	for _, bad := range []string{"", "spec", "/a~2b"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) should fail", bad)
		}
	}
}

func TestSetGetDelete(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"args": []any{"a", "b"}}}
	if err := Set(doc, Pointer{"spec", "new", "x"}, int64(1)); err != nil {
		t.Fatal(err)
	}
	if v, ok := Get(doc, Pointer{"spec", "new", "x"}); !ok || v != int64(1) {
		t.Fatalf("got %v %v", v, ok)
	}
	if err := Set(doc, Pointer{"spec", "args", "1"}, "B"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []string{"2", "9"} {
		if err := Set(doc, Pointer{"spec", "args", i}, "z"); err == nil {
			t.Fatalf("index %s: Set never appends a list element", i)
		}
	}
	Delete(doc, Pointer{"spec", "args", "0"})
	if v, _ := Get(doc, Pointer{"spec", "args"}); !reflect.DeepEqual(v, []any{"B"}) {
		t.Fatalf("after delete: %v", v)
	}
	Delete(doc, Pointer{"spec", "missing", "deep"})
	if _, ok := Get(doc, Pointer{"spec", "args", "x"}); ok {
		t.Fatal("non-numeric index must not resolve")
	}
}

func TestResolveByKey(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"gates": []any{
		map[string]any{"name": "a", "state": "on"},
		map[string]any{"name": "b", "state": "off", "n": int64(2)},
	}}}
	cases := map[string]string{
		"/spec/gates/name=b/state":     "/spec/gates/1/state",
		"/spec/gates/name=b&n=2":       "/spec/gates/1",
		"/spec/gates/0":                "/spec/gates/0",
		"/spec/gates/name=c":           "",
		"/spec/gates/name=b&n=3":       "",
		"/spec/gates/5":                "",
		"/spec/missing/name=a":         "",
		"/spec/gates/name=a/state/sub": "",
	}
	for in, want := range cases {
		p, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := Resolve(doc, p)
		if (want == "") == ok || (ok && got.String() != want) {
			t.Errorf("%s: got %q %v, want %q", in, got, ok, want)
		}
	}
}

// An array index is written as RFC 6901 writes it: "0" or digits without
// a leading zero; "+1", "-0", "01" and " 1" name nothing.
func TestArrayIndexIsStrict(t *testing.T) {
	doc := map[string]any{"l": []any{"a", "b"}}
	for tok, want := range map[string]bool{"0": true, "1": true, "01": false, "+1": false, "-0": false, " 1": false, "1 ": false, "": false, "00": false} {
		if _, ok := Get(doc, Pointer{"l", tok}); ok != want {
			t.Errorf("index %q: resolves=%v, want %v", tok, ok, want)
		}
	}
	if err := Set(doc, Pointer{"l", "01"}, "x"); err == nil {
		t.Error("Set at index 01 must fail")
	}
}

// Set and Delete address list elements by key as Get does.
func TestSetDeleteByKey(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"gates": []any{
		map[string]any{"name": "a", "state": "on"},
		map[string]any{"name": "b", "state": "off"},
	}}}
	if err := Set(doc, Pointer{"spec", "gates", "name=b", "state"}, "on"); err != nil {
		t.Fatal(err)
	}
	if v, _ := Get(doc, Pointer{"spec", "gates", "1", "state"}); v != "on" {
		t.Fatalf("Set by key: %v", v)
	}
	if err := Set(doc, Pointer{"spec", "gates", "name=z", "state"}, "on"); err == nil {
		t.Error("Set never creates an element a key names")
	}
	Delete(doc, Pointer{"spec", "gates", "name=a"})
	if v, _ := Get(doc, Pointer{"spec", "gates"}); !reflect.DeepEqual(v, []any{map[string]any{"name": "b", "state": "on"}}) {
		t.Fatalf("Delete by key: %v", v)
	}
	Delete(doc, Pointer{"spec", "gates", "name=b", "state"})
	if _, ok := Get(doc, Pointer{"spec", "gates", "name=b", "state"}); ok {
		t.Fatal("Delete below a key selector")
	}
	Delete(doc, Pointer{"spec", "gates", "name=q"}) // names nothing: no change, no panic
}
