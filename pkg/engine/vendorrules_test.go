package engine_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubevirt/virt-platform-autopilot/pkg/engine"
)

// Every vendor rule names a source and a test that exists: the docs never
// cite a proof that is not there.
func TestVendorRulesNameTheirProof(t *testing.T) {
	var src strings.Builder
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		src.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range engine.VendorRules {
		if r.Source == "" || r.EnforcedBy == "" || r.Rule == "" {
			t.Errorf("incomplete: %+v", r)
		}
		for _, name := range strings.Split(r.ProvenBy, ", ") {
			if !regexp.MustCompile(`func ` + name + `\(t \*testing\.T\)`).MatchString(src.String()) {
				t.Errorf("rule %q cites %s, which is no test", r.Rule, name)
			}
		}
	}
}
