// Package jsonpointer reads and edits unstructured objects by RFC 6901 pointers.
package jsonpointer

import (
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer.
type Pointer []string

// Parse parses s ("/spec/a~1b/0"); the empty pointer (whole document) is refused.
func Parse(s string) (Pointer, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("pointer %q must start with '/'", s)
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(p, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("pointer %q: invalid escape in %q (use ~0 for ~ and ~1 for /)", s, p)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// String renders the pointer back to RFC 6901 form.
func (p Pointer) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// HasPrefix reports whether p is q or below q.
func (p Pointer) HasPrefix(q Pointer) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Get returns the value at p (list elements by index or key selector, as
// in Resolve).
func Get(doc any, p Pointer) (any, bool) {
	_, v, ok := walk(doc, p)
	return v, ok
}

// Resolve turns p into a concrete pointer into doc: in a list, a token
// "key=value" (several joined by "&") selects the element whose fields
// have those values, as list-type map keys do; a number is an index. It
// returns false when p does not resolve in doc.
func Resolve(doc any, p Pointer) (Pointer, bool) {
	out, _, ok := walk(doc, p)
	return out, ok
}

func walk(doc any, p Pointer) (Pointer, any, bool) {
	out := make(Pointer, 0, len(p))
	cur := doc
	for _, tok := range p {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, nil, false
			}
			out, cur = append(out, tok), v
		case []any:
			i := index(c, tok)
			if i < 0 {
				return nil, nil, false
			}
			out, cur = append(out, strconv.Itoa(i)), c[i]
		default:
			return nil, nil, false
		}
	}
	return out, cur, true
}

// KeySelector reports whether tok selects a list element by key.
func KeySelector(tok string) bool {
	_, isIndex := arrayIndex(tok)
	return !isIndex && strings.Contains(tok, "=")
}

// arrayIndex reads tok as RFC 6901 writes an array index: "0", or digits
// without a leading zero; no sign, no blanks (strconv.Atoi would take
// "+1", "-0" and "01").
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (tok[0] == '0' && len(tok) > 1) {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// index is the element of list tok names (by index or key selector), or
// -1.
func index(list []any, tok string) int {
	if !KeySelector(tok) {
		i, ok := arrayIndex(tok)
		if !ok || i >= len(list) {
			return -1
		}
		return i
	}
	for i, elem := range list {
		m, ok := elem.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for _, kv := range strings.Split(tok, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if fmt.Sprint(m[k]) != v || m[k] == nil {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// Set stores v at p, creating missing maps on the way. List elements
// (by index or key selector) must exist: Set never appends one.
func Set(doc map[string]any, p Pointer, v any) error {
	if len(p) == 0 {
		return fmt.Errorf("cannot replace the whole object")
	}
	_, err := set(doc, p, v)
	return err
}

func set(node any, p Pointer, v any) (any, error) {
	if len(p) == 0 {
		return v, nil
	}
	tok := p[0]
	switch c := node.(type) {
	case nil:
		if _, isIndex := arrayIndex(tok); isIndex || KeySelector(tok) {
			return nil, fmt.Errorf("cannot create list element %q of a missing list", tok)
		}
		child, err := set(nil, p[1:], v)
		if err != nil {
			return nil, err
		}
		return map[string]any{tok: child}, nil
	case map[string]any:
		child, err := set(c[tok], p[1:], v)
		if err != nil {
			return nil, err
		}
		c[tok] = child
		return c, nil
	case []any:
		i := index(c, tok)
		if i < 0 {
			return nil, fmt.Errorf("list element %q not found (length %d)", tok, len(c))
		}
		child, err := set(c[i], p[1:], v)
		if err != nil {
			return nil, err
		}
		c[i] = child
		return c, nil
	default:
		return nil, fmt.Errorf("cannot descend into a %T at %q", node, tok)
	}
}

// Delete removes the value at p (list elements by index or key selector,
// as in Resolve); a missing value is not an error.
func Delete(doc map[string]any, p Pointer) {
	if len(p) == 0 {
		return
	}
	p, ok := Resolve(doc, p)
	if !ok {
		return
	}
	parent, _ := Get(doc, p[:len(p)-1])
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		delete(c, last)
	case []any:
		i, _ := arrayIndex(last) // Resolve wrote it
		// Lists are values: rebuild and store the shorter list in its parent.
		shorter := append(append([]any{}, c[:i]...), c[i+1:]...)
		_ = Set(doc, p[:len(p)-1], shorter)
	}
}
