package dryrun

import "testing"

func TestUnifiedDiff(t *testing.T) {
	if d := unifiedDiff("a", "b", "x\ny\n", "x\ny\n"); d != "" {
		t.Fatalf("equal inputs: %q", d)
	}
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"
	want := "--- a\n+++ b\n@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n"
	if got := unifiedDiff("a", "b", a, b); got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
	created := unifiedDiff("live", "desired", "", "kind: X\n")
	if created != "--- live\n+++ desired\n@@ -1,0 +1,1 @@\n+kind: X\n" {
		t.Fatalf("creation: %q", created)
	}
}
