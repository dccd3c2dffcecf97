package annotations

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// Written out independently of the parser's table: what each spelling of
// a boolean means.
var wantBool = map[string]bool{
	"true": true, "yes": true, "y": true, "on": true, "t": true, "1": true,
	"false": false, "no": false, "n": false, "off": false, "f": false, "0": false,
}

// oddly spells s as people and tools do: mixed case, surrounding blanks
// and a trailing newline (a YAML block scalar keeps one).
func oddly(rng *rand.Rand, s string) string {
	var b strings.Builder
	b.WriteString([]string{"", " ", "\t", "  "}[rng.IntN(4)])
	for _, r := range s {
		if rng.IntN(2) == 0 {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	b.WriteString([]string{"", " ", "\n", " \n"}[rng.IntN(4)])
	return b.String()
}

func TestParseBoolOverGeneratedSpellings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		for s, want := range wantBool {
			v := oddly(rng, s)
			got, err := ParseBool("k", v)
			if err != nil || got != want {
				t.Fatalf("ParseBool(%q) = %v, %v; want %v", v, got, err, want)
			}
		}
	}
	// Near misses and other values are Invalid, never false.
	for _, v := range []string{"", " ", "ture", "flase", "enabled", "disabled", "2", "-1", "truee", "yes please", "\"true\"", "'true'", "true,false", "null", "~", "None", "\x00", strings.Repeat("y", 300)} {
		_, err := ParseBool("platform.kubevirt.io/enable-x", v)
		var inv *Invalid
		if !errors.As(err, &inv) || inv.Annotation != "platform.kubevirt.io/enable-x" || inv.Value != v || inv.Accepted == "" {
			t.Errorf("ParseBool(%q): %v, want an *Invalid naming the annotation, value and vocabulary", v, err)
		}
		if err != nil && len(err.Error()) > 600 {
			t.Errorf("ParseBool(%q): message of %d bytes, want it bounded", v, len(err.Error()))
		}
	}
	if on, err := ParseSwitch("k", "", false); on || err != nil {
		t.Errorf("an absent switch is off: %v %v", on, err)
	}
	if _, err := ParseSwitch("k", "", true); err == nil {
		t.Errorf("a switch present and empty is not understood")
	}
}

func TestParseMode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		for s, want := range map[string]ModeValue{"managed": ModeManaged, "unmanaged": ModeUnmanagedValue} {
			v := oddly(rng, s)
			if got, err := ParseMode(map[string]string{Mode: v}); err != nil || got != want {
				t.Fatalf("ParseMode(%q) = %v, %v", v, got, err)
			}
		}
	}
	if m, err := ParseMode(nil); m != ModeManaged || err != nil {
		t.Errorf("no annotation is managed: %v %v", m, err)
	}
	for _, v := range []string{"", "unmanged", "un-managed", "ignore", "off", "false", "Unmanaged please", "disabled"} {
		if _, err := ParseMode(map[string]string{Mode: v}); err == nil {
			t.Errorf("ParseMode(%q) understood", v)
		}
		if !LeftAlone(map[string]string{Mode: v}) {
			t.Errorf("mode %q not understood must leave the object alone", v)
		}
	}
	if LeftAlone(map[string]string{Mode: " Managed "}) || !LeftAlone(map[string]string{Mode: "UNMANAGED"}) {
		t.Errorf("LeftAlone misreads a valid mode")
	}
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string]string{
		"a,b":             "a|b",
		" a , b ,, c ":    "a|b|c",
		"a\nb\n":          "a|b",
		"- a\n":           "- a", // a YAML sequence is not a list annotation's syntax: kept, so it is reported
		"a,\n  b\r\n  c,": "a|b|c",
		"":                "",
		" \n , \n":        "",
		"MachineConfig/x\nKubeletConfig/y,ConfigMap/ns/z": "MachineConfig/x|KubeletConfig/y|ConfigMap/ns/z",
	} {
		if got := strings.Join(SplitList(in), "|"); got != want {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseActivation(t *testing.T) {
	for _, c := range []struct {
		v       string
		present bool
		all     bool
		paused  bool
		names   string
	}{
		{"", false, true, false, ""},
		{" ", true, true, false, ""},
		{"True", true, true, false, ""},
		{"yes", true, true, false, ""},
		{"FALSE", true, false, true, ""},
		{"off\n", true, false, true, ""},
		{"logging, swap\nloadaware", true, false, false, "logging|swap|loadaware"},
		{"flase", true, false, false, "flase"},
	} {
		got := ParseActivation(c.v, c.present)
		if got.All != c.all || got.Paused != c.paused || strings.Join(got.Names, "|") != c.names {
			t.Errorf("ParseActivation(%q) = %+v", c.v, got)
		}
	}
}
