package annotations

import (
	"strings"
	"testing"
)

func TestParsePatch(t *testing.T) {
	cases := map[string]string{
		`[{"op":"replace","path":"/spec/a","value":1}]`: "",
		`{"op":"replace"}`: "not a list of patch operations",
		`[{"op":"replace","path":"/metadata/name","value":"x"}]`:     "protected",
		`[{"op":"remove","path":"/status"}]`:                         "protected",
		`[{"op":"move","from":"/kind","path":"/spec/k"}]`:            "protected",
		`[{"op":"frobnicate","path":"/spec/a"}]`:                     "unsupported operation",
		`[{"op":"add","path":"","value":{}}]`:                        "whole object",
		`[{"op":"add","value":1}]`:                                   "missing path",
		`[{"op":"replace","path":"/metadata","value":{}}]`:           "protected",
		`[{"op":"add","path":"/metadata/finalizers/-","value":"x"}]`: "protected",
		`[{"op":"remove","path":"/metadata/ownerReferences"}]`:       "protected",
		`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`:     "",
		// YAML, as a GitOps block scalar writes it (kubectl takes it too).
		"- op: replace\n  path: /spec/a\n  value: 1\n": "",
		"- op: remove\n  path: /status\n":              "protected",
		"":                                             "not a list of patch operations",
		"[":                                            "not a list of patch operations",
		"op: x":                                        "not a list of patch operations",
	}
	for in, want := range cases {
		_, err := ParsePatch(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: want error %q, got %v", in, want, err)
		}
	}
}
