package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
)

// CompiledSuffix names the compiled catalog, beside its YAML source
// (metadata.yaml.compiled.json). Parsing the YAML was a third of an offline
// render's time; the compiled form is the same catalog as JSON, which
// decodes several times faster. It records the hash of the YAML it was
// made from and is used only while that matches, so a stale one costs time,
// never correctness; 'make generate' refreshes it and 'make verify' fails
// when it is stale.
const CompiledSuffix = ".compiled.json"

type compiled struct {
	SourceSHA256 string  `json:"sourceSHA256"`
	Catalog      Catalog `json:"catalog"`
}

// Compile returns the compiled form of the catalog YAML raw.
func Compile(raw []byte) ([]byte, error) {
	c, err := decodeYAML(raw)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(compiled{SourceSHA256: sourceHash(raw), Catalog: *c}); err != nil {
		return nil, fmt.Errorf("compile catalog: %w", err)
	}
	return b.Bytes(), nil
}

// loadCompiled decodes the compiled catalog beside path when it was made
// from raw.
func loadCompiled(fsys fs.FS, path string, raw []byte) (*Catalog, bool) {
	js, err := fs.ReadFile(fsys, path+CompiledSuffix)
	if err != nil {
		return nil, false
	}
	var c compiled
	if err := json.Unmarshal(js, &c); err != nil || c.SourceSHA256 != sourceHash(raw) {
		return nil, false
	}
	return &c.Catalog, true
}

func sourceHash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
