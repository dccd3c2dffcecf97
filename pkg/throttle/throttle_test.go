package throttle

import (
	"testing"
	"time"
)

func TestBurstThenRefill(t *testing.T) {
	now := time.Unix(0, 0)
	th := New(Config{Burst: 2, Refill: time.Minute})
	th.now = func() time.Time { return now }
	for i := 0; i < 2; i++ {
		if ok, _ := th.Allow("a"); !ok {
			t.Fatalf("write %d within burst refused", i)
		}
	}
	ok, wait := th.Allow("a")
	if ok || wait <= 0 || wait > time.Minute {
		t.Fatalf("third write: ok=%v wait=%v", ok, wait)
	}
	if !th.State("a").Throttled || th.Throttled() != 1 {
		t.Fatal("a should be throttled")
	}
	if ok, _ := th.Allow("b"); !ok {
		t.Fatal("buckets are per object")
	}
	now = now.Add(time.Minute)
	if ok, _ := th.Allow("a"); !ok {
		t.Fatal("a token must be back after Refill")
	}
	if th.State("a").Throttled {
		t.Fatal("a allowed write clears the throttled state")
	}
}

func TestIdleBucketsAreDropped(t *testing.T) {
	now := time.Unix(0, 0)
	th := New(Config{Burst: 1, Refill: time.Hour, IdleTTL: time.Minute})
	th.now = func() time.Time { return now }
	th.Allow("a")
	now = now.Add(2 * time.Minute)
	th.Allow("b")
	if _, ok := th.buckets["a"]; ok {
		t.Fatal("idle bucket kept")
	}
}

// A person is not a fight: with the default budget, five corrections 7 s
// apart are all made; a continuous fight then gets one write per Refill,
// and Wait tells, without taking a token, that nothing may be sent.
func TestDefaultBudgetServesAPersonAndBoundsAFight(t *testing.T) {
	now := time.Unix(0, 0)
	th := New(Config{})
	th.now = func() time.Time { return now }
	for i := 0; i < 5; i++ {
		if w := th.Wait("o"); w != 0 {
			t.Fatalf("correction %d: wait %s", i+1, w)
		}
		if ok, _ := th.Allow("o"); !ok {
			t.Fatalf("correction %d, 7s after the previous one, refused", i+1)
		}
		now = now.Add(7 * time.Second)
	}
	writes := 0
	for elapsed := time.Duration(0); elapsed < time.Hour; elapsed += time.Second {
		if th.Wait("o") == 0 {
			if ok, _ := th.Allow("o"); ok {
				writes++
			}
		}
		now = now.Add(time.Second)
	}
	if writes < 29 || writes > 31 {
		t.Fatalf("a fight lasting an hour gets about 30 writes (one per 2 minutes), got %d", writes)
	}
	tokens := th.State("o").Tokens
	th.Wait("o")
	if th.State("o").Tokens != tokens {
		t.Fatal("Wait must not take a token")
	}
}

// A refused write gives its token back: any number of refusals, each
// after a token was taken at a later instant, never empty the bucket;
// a refund without a token taken adds nothing, nor one above the burst.
func TestRefund(t *testing.T) {
	now := time.Unix(0, 0)
	th := New(Config{Burst: 2, Refill: time.Hour})
	th.now = func() time.Time { return now }
	for i := 0; i < 50; i++ {
		now = now.Add(time.Second)
		if ok, _ := th.Allow("o"); !ok {
			t.Fatalf("refusal %d: a refunded budget ran out", i)
		}
		now = now.Add(time.Second)
		th.Refund("o")
	}
	th.Refund("o")
	th.Refund("o")
	if got := th.State("o").Tokens; got > 2.01 {
		t.Fatalf("refunds beyond the burst: %v tokens", got)
	}
	th.Allow("o")
	th.Allow("o")
	if ok, _ := th.Allow("o"); ok {
		t.Fatal("unrefunded writes must spend the budget")
	}
	th.Refund("o") // the last Allow took nothing
	if ok, _ := th.Allow("o"); ok {
		t.Fatal("a refund of a refused Allow added a token")
	}
}
