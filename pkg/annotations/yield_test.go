package annotations

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// Over generated values: absent is the default list; "none" alone is no
// one; a value with anything not understood is an *Invalid naming the
// annotation and still yields to every default and every understood
// entry (never fewer than before the typo); separators and whitespace are
// spelled every way an admin types them.
func TestParseYieldTo(t *testing.T) {
	y, err := ParseYieldTo("", false)
	if err != nil || !slices.Equal(y.Managers(), sorted(DefaultYieldTo)) {
		t.Fatalf("absent: %v %v", y.Managers(), err)
	}
	if y, err := ParseYieldTo(" none ", true); err != nil || !y.Empty() {
		t.Fatalf("none: %v %v", y.Managers(), err)
	}
	rng := rand.New(rand.NewSource(20))
	good := []string{"my-pipeline", "argocd-controller", "kubectl-client-side-apply", "Mozilla", "a.b/c_d:e", "default"}
	bad := []string{"two words", "none", "é-manager", strings.Repeat("x", 129), "tab\there"}
	seps := []string{",", ", ", "\n", " ,\n ", ",,"}
	for i := 0; i < 2000; i++ {
		var parts, wantGood []string
		broken := false
		for n := 1 + rng.Intn(4); n > 0; n-- {
			if rng.Intn(5) == 0 {
				parts = append(parts, bad[rng.Intn(len(bad))])
				broken = true
				continue
			}
			g := good[rng.Intn(len(good))]
			parts = append(parts, g)
			if g == "default" {
				wantGood = append(wantGood, DefaultYieldTo...)
			} else {
				wantGood = append(wantGood, g)
			}
		}
		v := ""
		for j, p := range parts {
			if j > 0 {
				v += seps[rng.Intn(len(seps))]
			}
			v += p
		}
		y, err := ParseYieldTo(v, true)
		if broken && len(parts) == 1 && parts[0] == "none" {
			continue // "none" alone is understood
		}
		if broken != (err != nil) {
			t.Fatalf("%q: err=%v, want broken=%v", v, err, broken)
		}
		for _, m := range wantGood {
			if !y.Has(m) {
				t.Fatalf("%q: does not yield to %s (%v)", v, m, y.Managers())
			}
		}
		if err != nil {
			inv, ok := AsInvalid(err)
			if !ok || inv.Annotation != YieldTo || !strings.Contains(err.Error(), "accepted:") {
				t.Fatalf("%q: %v is not an Invalid naming %s and what is accepted", v, err, YieldTo)
			}
			for _, m := range DefaultYieldTo {
				if !y.Has(m) {
					t.Fatalf("%q: a typo handed %s's fields back", v, m)
				}
			}
		} else {
			for _, m := range y.Managers() {
				if !slices.Contains(wantGood, m) {
					t.Fatalf("%q: yields to %s, which it does not name", v, m)
				}
			}
		}
	}
}
