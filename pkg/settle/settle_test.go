package settle

import (
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(5*time.Minute, func() time.Time { return now })
	// First sight after a start: the live stamp decides.
	if _, w := tr.Wait("mc", "A", "A", true); w {
		t.Fatal("facts as the object was written: no wait")
	}
	if _, w := tr.Wait("new", "A", "", false); w {
		t.Fatal("a creation this process saw no fact change for (install, upgrade): no wait")
	}
	if _, w := tr.Wait("old", "A", "", true); w {
		t.Fatal("an object written before stamps (an upgrade): no wait")
	}
	// The facts change: the write waits the whole period from the change.
	if left, w := tr.Wait("mc", "B", "A", true); !w || left != 5*time.Minute {
		t.Fatalf("a fact change: wait %v %s, want 5m", w, left)
	}
	now = now.Add(4 * time.Minute)
	if left, w := tr.Wait("mc", "B", "A", true); !w || left != time.Minute {
		t.Fatalf("still settling: %v %s", w, left)
	}
	// It flickers back: nothing to write, nothing held.
	if _, w := tr.Wait("mc", "A", "A", true); w {
		t.Fatal("back to what the object was written from: no wait")
	}
	// And changes again: the period starts over.
	now = now.Add(time.Minute)
	if left, w := tr.Wait("mc", "B", "A", true); !w || left != 5*time.Minute {
		t.Fatalf("a new change restarts the period: %v %s", w, left)
	}
	now = now.Add(5 * time.Minute)
	if _, w := tr.Wait("mc", "B", "A", true); w {
		t.Fatal("held for the period: the write goes")
	}
	// A creation after a fact change this process saw waits too (the
	// print observed while the asset was inactive).
	tr.Observe("gpu", "A")
	if _, w := tr.Wait("gpu", "B", "", false); !w {
		t.Fatal("a creation a fact change asks for waits")
	}
	if _, w := New(0, nil).Wait("x", "B", "A", true); w {
		t.Fatal("period 0: never held")
	}
}

// A fact that keeps changing holds a write at most HoldFactor periods from
// the first wait of the episode: every wait has a deadline. After the
// write, the next change waits a whole period again.
func TestWaitHasADeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	period := 5 * time.Minute
	tr := New(period, func() time.Time { return now })
	prints := []string{"B", "C"}
	var last time.Duration
	waited := 0
	for i := 0; ; i++ {
		left, w := tr.Wait("mc", prints[i%2], "A", true)
		if !w {
			break
		}
		last = left
		waited++
		now = now.Add(4 * time.Minute) // changes again before the period ends
		if waited > 100 {
			t.Fatal("held for ever by a fact that keeps changing")
		}
	}
	if held := time.Duration(waited) * 4 * time.Minute; held < HoldFactor*period || held > HoldFactor*period+4*time.Minute {
		t.Fatalf("held %s (last wait %s), want about %s", held, last, HoldFactor*period)
	}
	// Written: the live object now carries the print; a later change starts a new episode.
	cur := prints[(waited)%2]
	if _, w := tr.Wait("mc", cur, cur, true); w {
		t.Fatal("no change since the write: no wait")
	}
	if left, w := tr.Wait("mc", "D", cur, true); !w || left != period {
		t.Fatalf("a new episode waits a whole period: %v %s", w, left)
	}
}
