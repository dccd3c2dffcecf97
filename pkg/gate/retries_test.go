package gate

import (
	"testing"
	"time"
)

// A failing key waits out its own backoff (1s, 2s, 4s...), whatever asks
// in between; others are not held; success ends the hold.
func TestRetriesHoldUntilTheBackoffExpires(t *testing.T) {
	now := time.Unix(0, 0)
	r := newRetries()
	r.now = func() time.Time { return now }
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := r.failed("a"); got != want {
			t.Fatalf("failure %d: backoff %s, want %s", i+1, got, want)
		}
		if left, held := r.held("a"); !held || left != want {
			t.Fatalf("failure %d: held=%v for %s, want %s", i+1, held, left, want)
		}
		now = now.Add(want - time.Millisecond)
		if _, held := r.held("a"); !held {
			t.Fatalf("failure %d: released before its backoff expired", i+1)
		}
		now = now.Add(time.Millisecond)
		if _, held := r.held("a"); held {
			t.Fatalf("failure %d: still held when its backoff expired", i+1)
		}
	}
	if _, held := r.held("b"); held {
		t.Fatal("a key that never failed is held")
	}
	r.succeeded("a")
	if _, held := r.held("a"); held {
		t.Fatal("held after success")
	}
	if got := r.failed("a"); got != time.Second {
		t.Fatalf("after success the backoff starts again at 1s, got %s", got)
	}
	for range 20 {
		r.failed("c")
	}
	if left, _ := r.held("c"); left != 5*time.Minute {
		t.Fatalf("backoff capped at 5m, got %s", left)
	}
}

func TestRetriesAreIndependent(t *testing.T) {
	r := newRetries()
	var last time.Duration
	for i := 0; i < 12; i++ {
		last = r.failed("broken")
	}
	if last != 5*time.Minute {
		t.Fatalf("backoff caps at 5 minutes, got %s", last)
	}
	if d := r.failed("other"); d != time.Second {
		t.Fatalf("another asset's first failure waits 1s, got %s", d)
	}
	r.succeeded("broken")
	if d := r.failed("broken"); d != time.Second {
		t.Fatalf("success resets the backoff, got %s", d)
	}
}
