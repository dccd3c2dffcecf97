package dryrun

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func machineConfig(source string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"config": map[string]any{
		"ignition": map[string]any{"version": "3.4.0"},
		"storage": map[string]any{"files": []any{
			map[string]any{"path": "/etc/a.conf", "mode": int64(420), "contents": map[string]any{"source": source}},
			map[string]any{"path": "/etc/remote", "contents": map[string]any{"source": "https://example.com/x"}},
		}}}}}}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfig")
	u.SetName("50-kubevirt-x")
	return u
}

// A diff of two MachineConfigs shows the file's lines that change, in
// either data URL encoding Ignition reads, never the base64; a credential
// in a file's text is redacted like any other; what is not a text data URL
// stays as it is.
func TestDiffShowsFilesDecoded(t *testing.T) {
	before := "line one\nvm.swappiness = 10\nhttps://ops:hunter2@registry.example.com/x\n"
	after := strings.Replace(before, "10", "60", 1)
	for name, enc := range map[string]func(string) string{
		"base64": func(s string) string {
			return "data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString([]byte(s))
		},
		"percent-encoded": func(s string) string { return "data:," + url.PathEscape(s) },
	} {
		a, b := toYAML2(machineConfig(enc(before)), machineConfig(enc(after)))
		d := unifiedDiff("live/x", "autopilot/x", a, b)
		if !changed(d, "-", "vm.swappiness = 10") || !changed(d, "+", "vm.swappiness = 60") {
			t.Errorf("%s: the changed line is not shown:\n%s", name, d)
		}
		if strings.Contains(a+b, "hunter2") || strings.Contains(a+b, base64.StdEncoding.EncodeToString([]byte(before))[:20]) {
			t.Errorf("%s: a credential or the base64 is shown:\n%s", name, a)
		}
		if !strings.Contains(a, "https://example.com/x") {
			t.Errorf("%s: a remote source is changed:\n%s", name, a)
		}
	}
	// Binary contents stay as they are.
	bin := "data:;base64," + base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0})
	if y := toYAML(machineConfig(bin)); !strings.Contains(y, bin) {
		t.Errorf("binary contents changed:\n%s", y)
	}
}

// changed: diff has a line marked sign whose text is text.
func changed(diff, sign, text string) bool {
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, sign) && strings.TrimSpace(strings.TrimPrefix(l, sign)) == text {
			return true
		}
	}
	return false
}
