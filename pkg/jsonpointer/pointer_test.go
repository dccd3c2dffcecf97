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
	if err := Set(doc, Pointer{"spec", "args", "2"}, "c"); err != nil {
		t.Fatal(err)
	}
	if err := Set(doc, Pointer{"spec", "args", "9"}, "z"); err == nil {
		t.Fatal("index past the end must fail")
	}
	Delete(doc, Pointer{"spec", "args", "0"})
	if v, _ := Get(doc, Pointer{"spec", "args"}); !reflect.DeepEqual(v, []any{"B", "c"}) {
		t.Fatalf("after delete: %v", v)
	}
	Delete(doc, Pointer{"spec", "missing", "deep"})
	if _, ok := Get(doc, Pointer{"spec", "args", "x"}); ok {
		t.Fatal("non-numeric index must not resolve")
	}
}
