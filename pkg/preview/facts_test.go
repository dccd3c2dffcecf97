package preview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const crdA = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: as.example.com
`

const crdB = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bs.example.com
`

// Every document of a file is read; two objects run together (files
// concatenated without a "---" line) fail naming the file, never one
// silently dropped; a List is read item by item, JSON as YAML.
func TestReadObjectsReadsWholeFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct {
		content string
		want    int
		err     string
	}{
		"separated":       {crdA + "---\n" + crdB, 2, ""},
		"concatenated":    {crdA + crdB, 0, "concatenated without a '---'"},
		"a list":          {"apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(crdA, "\n"), "\n", "\n  ") + "\n", 1, ""},
		"json":            {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 1, ""},
		"empty documents": {"---\n---\n" + crdA + "---\n", 1, ""},
		"not yaml at all": {"a: [", 0, "document 1"},
	} {
		objs, err := ReadObjects(write(strings.ReplaceAll(name, " ", "-")+".yaml", c.content))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err %v, want %q", name, err, c.err)
		case c.err == "" && (err != nil || len(objs) != c.want):
			t.Errorf("%s: %d objects, err %v; want %d", name, len(objs), err, c.want)
		}
	}
}
