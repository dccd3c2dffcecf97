package annotations

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// hostile are values that would change a document's structure, or a kernel
// command line, if emitted as they are.
var hostile = []string{
	" ", "a b", "a\nb", "a\n---\nb", "a: b", "#x", "{a}", "[a]", `"`, "'", `\`, "---",
	"*alias", "&anchor", "!!tag x", `{"a":1}`, "a,b", "a=b c", "\x00", "\xff\xfe", "é",
	strings.Repeat("a", 10<<10),
}

func TestParseStorageClassName(t *testing.T) {
	for in, want := range map[string]string{
		"nfs-csi": "nfs-csi", " ocs.rbd \n": "ocs.rbd", "": "", "  ": "", "a": "a",
		strings.Repeat("a", 253): strings.Repeat("a", 253),
	} {
		got, err := ParseStorageClassName("k", in)
		if err != nil || got != want {
			t.Errorf("ParseStorageClassName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, v := range append(hostile, "NFS", "-a", "a-", "a..b", strings.Repeat("a", 254)) {
		if strings.TrimSpace(v) == "" {
			continue // empty names no class
		}
		got, err := ParseStorageClassName("platform.kubevirt.io/sbr-storage-class", v)
		var inv *Invalid
		if !errors.As(err, &inv) || inv.Annotation != "platform.kubevirt.io/sbr-storage-class" || inv.Value != v || inv.Accepted != StorageClassNameAccepted || got != "" {
			t.Errorf("ParseStorageClassName(%q) = %q, %v; want an *Invalid naming the annotation", v, got, err)
		}
		if err != nil && len(err.Error()) > 1000 {
			t.Errorf("ParseStorageClassName(%q): message of %d bytes, want it bounded", v[:10], len(err.Error()))
		}
	}
}

// wantMalformed checks err is a bounded *Malformed naming what.
func wantMalformed(t *testing.T, fn string, v any, err error) {
	t.Helper()
	var m *Malformed
	if !errors.As(err, &m) || m.What != "w" || m.Accepted == "" {
		t.Errorf("%s(%.20q): %v, want a *Malformed naming the value", fn, v, err)
		return
	}
	if _, ok := AsInvalid(err); ok {
		t.Errorf("%s: a field's value is not an annotation's", fn)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("%s: message of %d bytes, want it bounded", fn, len(err.Error()))
	}
}

func TestParsePCIID(t *testing.T) {
	for in, want := range map[string]string{"10de:1eb8": "10de:1eb8", "10DE:1EB8": "10de:1eb8", "8086:0D4c": "8086:0d4c"} {
		if got, err := ParsePCIID("w", in); err != nil || got != want {
			t.Errorf("ParsePCIID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, v := range append(hostile, "", "10de", "10de:1eb", "10de:1eb89", "10de:1eb8 ", " 10de:1eb8", "10de:1eb8\n", "10de-1eb8", "g0de:1eb8", "10de:1eb8,8086:0d4c") {
		got, err := ParsePCIID("w", v)
		if got != "" {
			t.Errorf("ParsePCIID(%q) = %q", v, got)
		}
		wantMalformed(t, "ParsePCIID", v, err)
	}
	for _, v := range []any{nil, 10, map[string]any{}, []any{"10de:1eb8"}} {
		_, err := ParsePCIID("w", v)
		wantMalformed(t, "ParsePCIID", v, err)
	}
}

func TestParseDNSSubdomain(t *testing.T) {
	for _, in := range []string{"logging-loki-s3", "a.b-c", "0", strings.Repeat("a", 253)} {
		if got, err := ParseDNSSubdomain("w", in); err != nil || got != in {
			t.Errorf("ParseDNSSubdomain(%q) = %q, %v", in, got, err)
		}
	}
	for _, v := range append(hostile, "", "A", "a_b", strings.Repeat("a", 254)) {
		_, err := ParseDNSSubdomain("w", v)
		wantMalformed(t, "ParseDNSSubdomain", v, err)
	}
	_, err := ParseDNSSubdomain("w", 5)
	wantMalformed(t, "ParseDNSSubdomain", 5, err)
}

func TestParseInteger(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
	}{{int64(5), 5}, {5, 5}, {int32(-2), -2}, {uint32(7), 7}, {uint64(8), 8}, {float64(3), 3}, {json.Number("12"), 12}, {int64(0), 0}} {
		if got, err := ParseInteger("w", tc.in); err != nil || got != tc.want {
			t.Errorf("ParseInteger(%#v) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	// A string is never a number, not even "5": it would change the type.
	bad := []any{"5", "", nil, 1.5, float64(1 << 63), uint64(1 << 63), json.Number("1.5"), json.Number("x"), true, map[string]any{}}
	for _, v := range hostile {
		bad = append(bad, v)
	}
	for _, v := range bad {
		_, err := ParseInteger("w", v)
		wantMalformed(t, "ParseInteger", v, err)
	}
}

func TestParseEnumValue(t *testing.T) {
	for _, in := range []string{"s3", "KubeVirtRelieveAndMigrate", "1x.extra-small", "a_b", "A"} {
		if got, err := ParseEnumValue("w", in); err != nil || got != in {
			t.Errorf("ParseEnumValue(%q) = %q, %v", in, got, err)
		}
	}
	for _, v := range append(hostile, "", "-a", "a.", "a b", strings.Repeat("a", 64)) {
		_, err := ParseEnumValue("w", v)
		wantMalformed(t, "ParseEnumValue", v, err)
	}
	_, err := ParseEnumValue("w", nil)
	wantMalformed(t, "ParseEnumValue", nil, err)
}

func TestParseLabels(t *testing.T) {
	good := map[string]any{"kubernetes.io/os": "linux", "example.com/gpu": "", "vm": "true"}
	if got, err := ParseLabels("w", good); err != nil || len(got) != 3 {
		t.Errorf("ParseLabels(%v) = %v, %v", good, got, err)
	}
	if got, err := ParseLabels("w", nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ParseLabels(nil) = %v, %v; want empty", got, err)
	}
	for _, v := range hostile {
		for _, m := range []map[string]any{{"vm": v}, {v: "true"}} {
			_, err := ParseLabels("w", m)
			var mf *Malformed
			if !errors.As(err, &mf) || !strings.HasPrefix(mf.What, "w") {
				t.Errorf("ParseLabels(%.20q): %v, want a *Malformed", m, err)
			}
		}
	}
	for _, v := range []any{"a: b", []any{"a"}, map[string]any{"vm": 1}, map[string]any{"vm": nil}} {
		if _, err := ParseLabels("w", v); err == nil {
			t.Errorf("ParseLabels(%v): accepted", v)
		}
	}
}
