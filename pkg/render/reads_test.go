package render

import (
	"fmt"
	"slices"
	"testing"
	"testing/fstest"
)

// What a template reads comes from its parse tree: a field named in a
// comment or a string reads nothing; a field read whole, the data passed
// on, or a template that does not parse reads everything under it.
func TestReadsOf(t *testing.T) {
	cases := []struct {
		src      string
		field    []string
		reads    bool
		function string
	}{
		{`{{ .Hardware.CPUVendors }}`, []string{"Hardware", "CPUVendors"}, true, ""},
		{`{{ .Hardware.CPUVendors }}`, []string{"Hardware", "NUMA"}, false, ""},
		{`{{ .Hardware.CPUVendors }}`, []string{"Topology"}, false, ""},
		{`{{ with .Hardware }}{{ .NUMA }}{{ end }}`, []string{"Hardware", "GPU"}, true, ""},
		{`{{ range .Params }}{{ .Topology }}{{ end }}`, []string{"Topology"}, false, ""},
		{`{{ range .Params }}{{ $.Topology.Nodes }}{{ end }}`, []string{"Topology", "Nodes"}, true, ""},
		{`{{ $d := . }}{{ $d }}`, []string{"Topology", "Nodes"}, true, ""},
		{`{{/* .Topology.Nodes */}}x: ".Hardware"`, []string{"Topology"}, false, ""},
		{`{{ if .HCO.spec }}{{ else }}{{ .Live }}{{ end }}`, []string{"Live"}, true, ""},
		{`{{ toJson (dict "a" .Topology) }}`, []string{"Topology", "Nodes"}, true, "toJson"},
		{`{{ crdHasField "x" "spec" }}`, []string{"HCO"}, false, "crdHasField"},
		{`{{ .Hardware.`, []string{"Topology", "Nodes"}, true, ""}, // does not parse
	}
	for _, c := range cases {
		r := New(fstest.MapFS{"t.tpl": {Data: []byte(c.src)}})
		got := r.ReadsOf("t.tpl")
		if got.Field(c.field...) != c.reads {
			t.Errorf("%s: reads %v = %v, want %v (%v)", c.src, c.field, !c.reads, c.reads, got.Fields)
		}
		if c.function != "" && !got.Funcs[c.function] {
			t.Errorf("%s: calls %s, not seen (%v)", c.src, c.function, got.Funcs)
		}
	}
	// dig into .HCO with constant keys reads that path only; with a key
	// not constant, or .HCO read another way, the HCO is read whole.
	for src, want := range map[string]string{
		`{{ dig "spec" "a" "b" dict .HCO }}`:                        "[[spec a b]] whole=false",
		`{{ dig "spec" "a" (dig "spec" "b" "" .HCO) .HCO }}`:        "[[spec a] [spec b]] whole=false",
		`{{ dig "spec" .Params.k dict .HCO }}`:                      "[] whole=true",
		`{{ dig "spec" "a" dict .HCO }}{{ if .HCO }}{{ end }}`:      "[[spec a]] whole=true",
		`{{ with .Params }}{{ dig "spec" "a" dict .HCO }}{{ end }}`: "[] whole=false",
	} {
		r := New(fstest.MapFS{"t.tpl": {Data: []byte(src)}})
		got := r.ReadsOf("t.tpl")
		if s := fmt.Sprintf("%v whole=%v", got.HCOPaths, got.Field("HCO")); s != want {
			t.Errorf("%s: %s, want %s", src, s, want)
		}
		if !r.ReadsHCO("t.tpl") && src != `{{ with .Params }}{{ dig "spec" "a" dict .HCO }}{{ end }}` {
			t.Errorf("%s: reads the HCO", src)
		}
	}
	// Calls with constant arguments are listed by function; one with
	// another argument is not.
	args := New(fstest.MapFS{"t.tpl": {Data: []byte(`{{ switch "enable-a" }}{{ switch .Params.x }}{{ excluded "K" "ns" "n" }}`)}}).ReadsOf("t.tpl").Args
	if fmt.Sprint(args["switch"]) != "[[enable-a]]" || fmt.Sprint(args["excluded"]) != "[[K ns n]]" {
		t.Errorf("constant arguments: %v", args)
	}
	r := New(fstest.MapFS{"t.tpl": {Data: []byte(`{{ .Hardware.NUMA }}{{ .Hardware.CPUVendors }}{{ .Topology }}`)}})
	names, whole := r.ReadsOf("t.tpl").Under("Hardware")
	if whole || !slices.Equal(names, []string{"CPUVendors", "NUMA"}) {
		t.Errorf("Under(Hardware) = %v %v", names, whole)
	}
	if _, whole := r.ReadsOf("t.tpl").Under("Topology"); !whole {
		t.Error("Topology read whole")
	}
}
