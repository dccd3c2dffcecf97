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
