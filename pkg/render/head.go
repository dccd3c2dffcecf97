package render

import (
	"bytes"
	"strings"
)

// PoolSelectorKinds are the kinds whose node pool a selector in spec names
// (a MachineConfig names its pool by label): their head keeps spec.
var PoolSelectorKinds = map[string]bool{"KubeletConfig": true, "ContainerRuntimeConfig": true}

// headKeys are the top-level keys that name an object.
var headKeys = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

// head returns the top-level sections of a rendered document that name
// its object (headKeys, and spec for PoolSelectorKinds). It reads the
// plain shape templates write: one block mapping whose keys start a line
// at column 0, everything else indented, a sequence under a key or a
// comment. Anything else (several documents, flow or quoted keys,
// directives, a key twice) is ok false: decode the document whole.
func head(doc []byte) ([]byte, bool) {
	sections := map[string][]byte{}
	var order []string
	var key string
	var start int
	flush := func(end int) bool {
		if key == "" {
			return true
		}
		if _, dup := sections[key]; dup {
			return false
		}
		sections[key] = doc[start:end]
		order = append(order, key)
		return true
	}
	for pos := 0; pos < len(doc); {
		end := bytes.IndexByte(doc[pos:], '\n')
		if end < 0 {
			end = len(doc)
		} else {
			end += pos + 1
		}
		line := doc[pos:end]
		switch c := firstByte(line); {
		case c == ' ' || c == '\t' || c == '#' || c == '\n' || c == '\r' || c == 0:
		case c == '-' && !bytes.HasPrefix(line, []byte("---")) && !bytes.HasPrefix(line, []byte("...")):
			// A sequence written at the key's own indentation.
			if key == "" {
				return nil, false
			}
		case isKeyStart(c):
			colon := bytes.IndexByte(line, ':')
			if colon < 0 || !separates(line[colon+1:]) || !flush(pos) {
				return nil, false
			}
			key, start = strings.TrimSpace(string(line[:colon])), pos
		default:
			return nil, false
		}
		pos = end
	}
	if !flush(len(doc)) {
		return nil, false
	}
	kind := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(sections["kind"])), "kind:"))
	var out []byte
	for _, k := range order {
		s := sections[k]
		if headKeys[k] || (k == "spec" && PoolSelectorKinds[kind]) {
			out = append(out, s...)
			if len(s) > 0 && s[len(s)-1] != '\n' {
				out = append(out, '\n')
			}
		}
	}
	return out, sections["kind"] != nil
}

// separates reports whether what follows a colon makes it a key's: a
// space, a line end or nothing ("a:b" is a plain scalar).
func separates(rest []byte) bool {
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '\t'
}

func firstByte(line []byte) byte {
	if len(line) == 0 {
		return 0
	}
	return line[0]
}

func isKeyStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
