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
