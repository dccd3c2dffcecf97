package objyaml

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// writer writes the block YAML of Marshal. It replaced yaml.v2's emitter
// for render --output yaml, where the emitter's per-event bookkeeping was a
// quarter of an offline render's time.
type writer struct {
	b bytes.Buffer
}

func (w *writer) indent(n int) {
	for i := 0; i < n; i++ {
		w.b.WriteByte(' ')
	}
}

// mapping writes m's entries at indent n, each on its own line.
func (w *writer) mapping(m map[string]any, n int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i > 0 {
			w.indent(n)
		}
		w.scalarString(k, -1)
		w.b.WriteByte(':')
		w.value(m[k], n, false)
	}
}

// sequence writes s's items at indent n, the first on the current line.
func (w *writer) sequence(s []any, n int) {
	for i, e := range s {
		if i > 0 {
			w.indent(n)
		}
		w.b.WriteString("-")
		w.value(e, n, true)
	}
}

// value writes v after "key:" or "-" at indent n.
func (w *writer) value(v any, n int, item bool) {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			w.b.WriteString(" null\n") // as JSON writes a nil map
			return
		}
		if len(t) == 0 {
			w.b.WriteString(" {}\n")
			return
		}
		if item {
			w.b.WriteByte(' ')
			w.mapping(t, n+2)
			return
		}
		w.b.WriteByte('\n')
		w.indent(n + 2)
		w.mapping(t, n+2)
	case []any:
		if t == nil {
			w.b.WriteString(" null\n")
			return
		}
		if len(t) == 0 {
			w.b.WriteString(" []\n")
			return
		}
		if item {
			w.b.WriteByte(' ')
			w.sequence(t, n+2)
			return
		}
		// A sequence under a key sits at the key's indentation, as
		// kubectl and yaml.v2 write it.
		w.b.WriteByte('\n')
		w.indent(n)
		w.sequence(t, n)
	case string:
		w.b.WriteByte(' ')
		w.scalarString(t, n+2)
		w.b.WriteByte('\n')
	case nil:
		w.b.WriteString(" null\n")
	case bool:
		w.b.WriteString(" " + strconv.FormatBool(t) + "\n")
	case int64:
		w.b.WriteString(" " + strconv.FormatInt(t, 10) + "\n")
	case float64:
		// plain admits only finite, non-integral floats: 'g' keeps a
		// fraction or an exponent, so it reads back as a float.
		w.b.WriteString(" " + strconv.FormatFloat(t, 'g', -1, 64) + "\n")
	}
}

// scalarString writes s plain when that reads back as the same string, as
// a literal block (block >= 0: its content's indentation) when it has
// several lines, else double-quoted.
func (w *writer) scalarString(s string, block int) {
	switch {
	case plainSafe(s):
		w.b.WriteString(s)
	case block >= 0 && literalSafe(s):
		w.literal(s, block)
	default:
		w.quoted(s)
	}
}

// quoted writes s double-quoted, escaping what YAML does not allow raw in
// a double-quoted scalar: the quote, the backslash, line breaks (YAML
// counts NEL and the Unicode separators among them) and anything not
// printable.
func (w *writer) quoted(s string) {
	w.b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			w.b.WriteByte('\\')
			w.b.WriteRune(r)
		case r == '\n':
			w.b.WriteString(`\n`)
		case r == '\t':
			w.b.WriteString(`\t`)
		case printable(r):
			w.b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&w.b, `\u%04x`, r)
		default:
			fmt.Fprintf(&w.b, `\U%08x`, r)
		}
	}
	w.b.WriteByte('"')
}

// printable: a rune YAML takes as itself in any scalar.
func printable(r rune) bool {
	return unicode.IsPrint(r) && r != '\u0085' && r != '\u2028' && r != '\u2029'
}

// literal writes s as a literal block: "|" keeps one final newline, "|-"
// none, "|+" all of them.
func (w *writer) literal(s string, n int) {
	body := strings.TrimRight(s, "\n")
	switch len(s) - len(body) {
	case 0:
		w.b.WriteString("|-")
	case 1:
		w.b.WriteString("|")
	default:
		w.b.WriteString("|+")
	}
	for _, line := range strings.Split(s[:len(s)-boolInt(len(s) > len(body))], "\n") {
		w.b.WriteByte('\n')
		if line != "" {
			w.indent(n)
			w.b.WriteString(line)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// literalSafe: several lines, printable, and nothing a literal block would
// read differently (a first line starting with a space needs an
// indentation indicator, a line starting with a tab is read as bad
// indentation, a carriage return is a line break to a reader).
func literalSafe(s string) bool {
	if !strings.Contains(s, "\n") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") || strings.Contains(s, "\n\t") || strings.HasPrefix(s, "\t") {
		return false
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && !printable(r) {
			return false
		}
	}
	return true
}

// plainSafe: s written plain reads back as s. Conservative: printable
// ASCII without tabs, not starting with an indicator or a space, no ": "
// or " #" inside, not ending in a space or colon, not a YAML 1.1 boolean
// or null, and, when it starts with a digit, nothing a reader could take
// for a number, a date or a sexagesimal (10Gi, 3.4.0 and
// 99-worker-kubevirt-numa stay plain).
func plainSafe(s string) bool {
	if s == "" || s[len(s)-1] == ' ' || s[len(s)-1] == ':' || strings.Contains(s, ": ") || strings.Contains(s, " #") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	if strings.IndexByte("-?:,[]{}#&*!|>'\"%@`.+<=~ ", s[0]) >= 0 {
		return false
	}
	if s[0] >= '0' && s[0] <= '9' {
		return !numberLike(s)
	}
	return !reserved[strings.ToLower(s)]
}

// numberLike: what a YAML reader might read as other than a string when
// it starts with a digit: anything strconv parses as a number (underscores
// dropped, any base, as yaml.v2 does), a date, a time or a sexagesimal.
func numberLike(s string) bool {
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseFloat(plain, 64); err == nil {
		return true
	}
	return strings.ContainsRune(s, ':') || date.MatchString(s)
}

// date matches the start of a YAML 1.1 timestamp (2002-12-14).
var date = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`)

// reserved are the words a YAML 1.1 or 1.2 reader takes for a boolean or
// null, lower-cased.
var reserved = map[string]bool{
	"y": true, "yes": true, "n": true, "no": true, "true": true, "false": true,
	"on": true, "off": true, "null": true, "~": true,
}
