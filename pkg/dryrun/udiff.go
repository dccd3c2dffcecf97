package dryrun

import (
	"fmt"
	"strings"
)

// maxTable bounds the LCS table (cells) one diff may allocate: 4 MiB of
// int32. Beyond it the differing middle is shown as removed then added:
// a correct diff, only not the shortest.
const maxTable = 1 << 20

// edit is one line of a diff.
type edit struct {
	kind   byte // ' ', '-', '+'
	text   string
	ai, bi int // line index in a and in b where the line sits
}

// unifiedDiff returns a unified diff (3 lines of context) from a to b, as
// GNU diff -u writes it, or "" when they are equal. Lines common to both
// ends are matched first, so an edit in a large object costs a table only
// over the lines that differ.
func unifiedDiff(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	x, y := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	var ops []edit
	for i := range pre {
		ops = append(ops, edit{' ', x[i], i, i})
	}
	ops = append(ops, middle(x[pre:len(x)-suf], y[pre:len(y)-suf], pre, pre)...)
	for k := range suf {
		i, j := len(x)-suf+k, len(y)-suf+k
		ops = append(ops, edit{' ', x[i], i, j})
	}
	return hunks(nameA, nameB, ops)
}

// middle diffs the lines between the common ends, x starting at line ax
// of a and y at line by of b.
func middle(x, y []string, ax, by int) []edit {
	n, m := len(x), len(y)
	var ops []edit
	if n*m > maxTable {
		for i := range x {
			ops = append(ops, edit{'-', x[i], ax + i, by})
		}
		for j := range y {
			ops = append(ops, edit{'+', y[j], ax + n, by + j})
		}
		return ops
	}
	// lcs[i*(m+1)+j]: the longest common subsequence of x[i:] and y[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, edit{' ', x[i], ax + i, by + j})
			i++
			j++
		case i < n && (j == m || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			ops = append(ops, edit{'-', x[i], ax + i, by + j})
			i++
		default:
			ops = append(ops, edit{'+', y[j], ax + i, by + j})
			j++
		}
	}
	return ops
}

// hunks writes ops as unified hunks with 3 lines of context.
func hunks(nameA, nameB string, ops []edit) string {
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const ctx = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-ctx, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*ctx || run == len(ops) {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ops[start].ai, aLen), hunkRange(ops[start].bi, bLen))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

// hunkRange writes a hunk's range as GNU diff does: "l" for one line,
// "l,n" for several, and for none the line before it, "l,0".
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
