package dryrun

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Hunks as GNU diff -u writes them (each want is diffutils' own output).
func TestUnifiedDiff(t *testing.T) {
	if d := unifiedDiff("a", "b", "x\ny\n", "x\ny\n"); d != "" {
		t.Fatalf("equal inputs: %q", d)
	}
	for name, c := range map[string]struct{ a, b, want string }{
		"change and append": {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n",
			"@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n"},
		"creation":       {"", "kind: X\n", "@@ -0,0 +1 @@\n+kind: X\n"},
		"removal":        {"kind: X\n", "", "@@ -1 +0,0 @@\n-kind: X\n"},
		"one line":       {"a\n", "b\n", "@@ -1 +1 @@\n-a\n+b\n"},
		"a line removed": {"1\n2\n3\n", "1\n3\n", "@@ -1,3 +1,2 @@\n 1\n-2\n 3\n"},
	} {
		if got := unifiedDiff("a", "b", c.a, c.b); got != "--- a\n+++ b\n"+c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got, c.want)
		}
	}
}

// Over generated edits, big and small, the hunks applied to a give b, and
// their headers count what they hold.
func TestUnifiedDiffAppliesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		n := rng.IntN(40)
		if round%50 == 0 {
			n = 3000 // a dashboard: a middle too big for the table
		}
		var a []string
		for i := range n {
			a = append(a, "line "+strconv.Itoa(i%17))
		}
		b := append([]string(nil), a...)
		for range rng.IntN(6) {
			switch k := rng.IntN(3); {
			case k == 0 && len(b) > 0:
				i := rng.IntN(len(b))
				b = append(b[:i], b[i+1:]...)
			case k == 1:
				i := rng.IntN(len(b) + 1)
				b = append(b[:i], append([]string{"new " + strconv.Itoa(rng.IntN(5))}, b[i:]...)...)
			case len(b) > 0:
				b[rng.IntN(len(b))] = "changed"
			}
		}
		if round%50 == 0 && len(b) > 10 {
			b[0], b[len(b)-1] = "first changed", "last changed" // nothing in common at the ends
		}
		as, bs := join(a), join(b)
		d := unifiedDiff("a", "b", as, bs)
		if (as == bs) != (d == "") {
			t.Fatalf("round %d: equal=%v, diff %q", round, as == bs, d)
		}
		if d == "" {
			continue
		}
		got, err := apply(a, d)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, d)
		}
		if join(got) != bs {
			t.Fatalf("round %d: applied diff does not give b", round)
		}
	}
}

func join(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// apply applies a unified diff to a, reading its headers as GNU patch does.
func apply(a []string, d string) ([]string, error) {
	lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")[2:]
	var out []string
	next := 0 // next line of a to copy
	for k := 0; k < len(lines); {
		var as, bs string
		if _, err := fmt.Sscanf(lines[k], "@@ -%s +%s @@", &as, &bs); err != nil {
			return nil, fmt.Errorf("header %q: %w", lines[k], err)
		}
		start, count := parseRange(as)
		_, bcount := parseRange(bs)
		first := start - 1 // index of the hunk's first line in a
		if count == 0 {
			first = start // an empty range names the line before
		}
		out = append(out, a[next:first]...)
		next = first
		k++
		seenA, seenB := 0, 0
		for k < len(lines) && !strings.HasPrefix(lines[k], "@@") {
			l := lines[k]
			switch l[0] {
			case ' ':
				if a[next] != l[1:] {
					return nil, fmt.Errorf("context %q is %q in a", l[1:], a[next])
				}
				out = append(out, l[1:])
				next++
				seenA++
				seenB++
			case '-':
				if a[next] != l[1:] {
					return nil, fmt.Errorf("removed %q is %q in a", l[1:], a[next])
				}
				next++
				seenA++
			case '+':
				out = append(out, l[1:])
				seenB++
			}
			k++
		}
		if seenA != count || seenB != bcount {
			return nil, fmt.Errorf("hunk -%s +%s holds %d and %d lines", as, bs, seenA, seenB)
		}
	}
	return append(out, a[next:]...), nil
}

func parseRange(s string) (start, count int) {
	l, c, ok := strings.Cut(s, ",")
	start, _ = strconv.Atoi(l)
	if !ok {
		return start, 1
	}
	count, _ = strconv.Atoi(c)
	return start, count
}
