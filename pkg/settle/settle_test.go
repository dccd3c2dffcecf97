package settle

import (
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(5*time.Minute, func() time.Time { return now })
	// First sight after a start: the live stamp decides.
	if _, w := tr.Wait("mc", pr("A"), pr("A"), true); w {
		t.Fatal("facts as the object was written: no wait")
	}
	if _, w := tr.Wait("new", pr("A"), Print{}, false); w {
		t.Fatal("a creation this process saw no fact change for (install, upgrade): no wait")
	}
	if _, w := tr.Wait("old", pr("A"), Print{}, true); w {
		t.Fatal("an object written before stamps (an upgrade): no wait")
	}
	// The facts change: the write waits the whole period from the change.
	if left, w := tr.Wait("mc", pr("B"), pr("A"), true); !w || left != 5*time.Minute {
		t.Fatalf("a fact change: wait %v %s, want 5m", w, left)
	}
	now = now.Add(4 * time.Minute)
	if left, w := tr.Wait("mc", pr("B"), pr("A"), true); !w || left != time.Minute {
		t.Fatalf("still settling: %v %s", w, left)
	}
	// It flickers back: nothing to write, nothing held.
	if _, w := tr.Wait("mc", pr("A"), pr("A"), true); w {
		t.Fatal("back to what the object was written from: no wait")
	}
	// And changes again: the period starts over.
	now = now.Add(time.Minute)
	if left, w := tr.Wait("mc", pr("B"), pr("A"), true); !w || left != 5*time.Minute {
		t.Fatalf("a new change restarts the period: %v %s", w, left)
	}
	now = now.Add(5 * time.Minute)
	if _, w := tr.Wait("mc", pr("B"), pr("A"), true); w {
		t.Fatal("held for the period: the write goes")
	}
	// A creation after a fact change this process saw waits too (the
	// print observed while the asset was inactive).
	tr.Observe("gpu", Print{Facts: Scheme + "A"}) // inactive: no object
	if _, w := tr.Wait("gpu", pr("B"), Print{}, false); !w {
		t.Fatal("a creation a fact change asks for waits")
	}
	if _, w := New(0, nil).Wait("x", pr("B"), pr("A"), true); w {
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
		left, w := tr.Wait("mc", pr(prints[i%2]), pr("A"), true)
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
	if _, w := tr.Wait("mc", pr(cur), pr(cur), true); w {
		t.Fatal("no change since the write: no wait")
	}
	if left, w := tr.Wait("mc", pr("D"), pr(cur), true); !w || left != period {
		t.Fatalf("a new episode waits a whole period: %v %s", w, left)
	}
}

// pr is a print whose object changes with the facts.
func pr(facts string) Print {
	return Print{Facts: Scheme + facts, Object: "object-" + facts, Intent: "I"}
}

// A fact change that does not change the object never holds its write: a
// correction of a person's edit goes at once, also for an object not yet
// created; a change of the object it renders (or of whether it is active
// at all) does hold.
func TestWaitJudgesTheObject(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := New(5*time.Minute, func() time.Time { return now })
	written := Print{Facts: Scheme + "A", Object: "X", Intent: "I"}
	if _, w := tr.Wait("mc", Print{Facts: Scheme + "B", Object: "X", Intent: "I"}, written, true); w {
		t.Fatal("facts changed, the object did not: a correction goes at once")
	}
	if left, w := tr.Wait("mc", Print{Facts: Scheme + "B", Object: "Y", Intent: "I"}, written, true); !w || left != 5*time.Minute {
		t.Fatalf("facts changed the object: %v %s", w, left)
	}
	if _, w := tr.Wait("mc", Print{Facts: Scheme + "B", Object: "Y", Intent: "I"}, Print{Facts: Scheme + "A", Intent: "I"}, true); !w {
		t.Fatal("a stamp of an earlier release (facts only): the facts decide")
	}
	tr.Observe("absent", Print{Facts: Scheme + "A", Object: "X", Intent: "I"})
	if _, w := tr.Wait("absent", Print{Facts: Scheme + "B", Object: "X", Intent: "I"}, Print{}, false); w {
		t.Fatal("a creation the changed facts render the same: no wait")
	}
	tr.Observe("off", Print{Facts: Scheme + "A"})
	if _, w := tr.Wait("off", Print{Facts: Scheme + "B", Object: "X", Intent: "I"}, Print{}, false); !w {
		t.Fatal("a fact that turns an asset on holds its creation")
	}
	if got := ParseStamp(written.Stamp()); got != written {
		t.Fatalf("stamp round trip: %+v", got)
	}
	if got := ParseStamp("A"); got != (Print{Facts: "A"}) {
		t.Fatalf("an earlier release's stamp: %+v", got)
	}
}

// Once its deadline has passed, a write stays free to go while another
// check holds it back (a closed window, a busy pool), even as the facts
// keep changing: every wait has a deadline, whatever comes after it.
func TestDeadlineHoldsWhileTheWriteIsHeldElsewhere(t *testing.T) {
	now := time.Unix(1000, 0)
	period := time.Minute
	tr := New(period, func() time.Time { return now })
	prints := []string{"B", "C"}
	for i := 0; ; i++ {
		if _, w := tr.Wait("mc", pr(prints[i%2]), pr("A"), true); !w {
			break
		}
		now = now.Add(50 * time.Second)
		if i > 100 {
			t.Fatal("no deadline")
		}
	}
	// Not written (held elsewhere); the facts keep changing.
	for i := 0; i < 10; i++ {
		now = now.Add(50 * time.Second)
		if _, w := tr.Wait("mc", pr(prints[i%2]), pr("A"), true); w {
			t.Fatalf("held again %d after its deadline passed", i)
		}
	}
	// Written: a later change waits a whole period again.
	tr.Wait("mc", pr("C"), pr("C"), true)
	if left, w := tr.Wait("mc", pr("D"), pr("C"), true); !w || left != period {
		t.Fatalf("a new episode: %v %s", w, left)
	}
}

// A stamp of another scheme (an earlier release hashed every fact of the
// pool) cannot tell whether the facts changed: this process's own
// observation decides, and a stamp whose object is the one rendered now
// never waits. An asset that reads no fact never waits.
func TestStampOfAnotherScheme(t *testing.T) {
	old := Print{Facts: "5ff21140a942f0f1", Object: "X", Intent: "I"}
	if d, known := FactDriven(Print{Facts: Scheme + "B", Object: "Y", Intent: "I"}, old); known || d {
		t.Fatalf("another scheme's stamp: driven %v known %v, want unknown", d, known)
	}
	if d, known := FactDriven(Print{Facts: Scheme + "B", Object: "X", Intent: "I"}, old); !known || d {
		t.Fatal("the object rendered now is the one written: not fact-driven, whatever the stamp's facts")
	}
	tr := New(5*time.Minute, func() time.Time { return time.Unix(0, 0) })
	if _, w := tr.Wait("seen-nothing", Print{Facts: Scheme + "B", Object: "Y", Intent: "I"}, old, true); w {
		t.Fatal("an unknown stamp and no change seen by this process: no wait (an upgrade's own change goes)")
	}
	tr.Observe("changed", Print{Facts: Scheme + "A", Object: "X", Intent: "I"})
	if _, w := tr.Wait("changed", Print{Facts: Scheme + "B", Object: "Y", Intent: "I"}, old, true); !w {
		t.Fatal("an unknown stamp, and this process saw the facts change what it renders: waits")
	}
	tr.Observe("none", Print{Facts: NoFacts, Object: "X", Intent: "I"})
	if _, w := tr.Wait("none", Print{Facts: NoFacts, Object: "Y", Intent: "I"}, Print{Facts: Scheme + "A", Object: "X", Intent: "I"}, true); w {
		t.Fatal("an asset that reads no fact never waits")
	}
}

// The intent print tells a person's change from the facts': a stamp of
// the same intent with other facts and object is the facts' (held and
// charged); another intent is a person's (neither); a stamp without the
// intent print (an earlier release's) still holds for the settle period,
// but charges nothing, since it cannot rule out a person's change.
func TestIntentInTheStamp(t *testing.T) {
	now := Print{Facts: Scheme + "B", Object: "Y", Intent: "I1"}
	for _, c := range []struct {
		name                   string
		live                   Print
		driven, known, charged bool
	}{
		{"the facts alone", Print{Facts: Scheme + "A", Object: "X", Intent: "I1"}, true, true, true},
		{"a person's edit", Print{Facts: Scheme + "A", Object: "X", Intent: "I0"}, false, true, false},
		{"an earlier release's stamp", Print{Facts: Scheme + "A", Object: "X"}, true, true, false},
		{"the same object", Print{Facts: Scheme + "A", Object: "Y", Intent: "I1"}, false, true, false},
		{"another scheme", Print{Facts: "A", Object: "X", Intent: "I1"}, false, false, false},
	} {
		driven, known := FactDriven(now, c.live)
		if driven != c.driven || known != c.known || Charged(now, c.live) != c.charged {
			t.Errorf("%s: driven %v known %v charged %v, want %v %v %v", c.name, driven, known, Charged(now, c.live), c.driven, c.known, c.charged)
		}
		if got := ParseStamp(c.live.Stamp()); got != c.live {
			t.Errorf("%s: the stamp %q reads back as %+v", c.name, c.live.Stamp(), got)
		}
	}
}
