package schedule

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// oracle says whether t is in a window by wall-clock arithmetic alone, in
// a zone without daylight saving.
func oracle(days [7]bool, start, end int, loc *time.Location, t time.Time) bool {
	l := t.In(loc)
	m := l.Hour()*60 + l.Minute()
	wd := l.Weekday()
	if days[wd] && m >= start && m < min(end, 1440) {
		return true
	}
	return end > 1440 && days[(wd+6)%7] && m < end-1440
}

// Over generated windows and moments: Open agrees with the oracle,
// NextOpen is never earlier than asked, is open, and nothing between the
// two is open.
func TestGeneratedWindows(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	names := []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	zones := []string{"UTC", "Asia/Kolkata", "Etc/GMT+5", "Asia/Tokyo"}
	base := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 300; i++ {
		var days [7]bool
		var list []string
		for d := range days {
			if rng.Intn(3) == 0 {
				days[d] = true
				list = append(list, names[d])
			}
		}
		if len(list) == 0 {
			days[2] = true
			list = []string{"tue"}
		}
		start, end := rng.Intn(24*4)*15, rng.Intn(24*4)*15
		if start == end {
			end = (start + 60) % 1440
		}
		zone := zones[rng.Intn(len(zones))]
		text := fmt.Sprintf("%s %02d:%02d-%02d:%02d %s", strings.Join(list, ","), start/60, start%60, end/60, end%60, zone)
		s, err := Parse(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		loc, _ := time.LoadLocation(zone)
		e := end
		if e < start {
			e += 1440
		}
		for j := 0; j < 40; j++ {
			at := base.Add(time.Duration(rng.Intn(14*24*60)) * time.Minute)
			if got, want := s.Open(at), oracle(days, start, e, loc, at); got != want {
				t.Fatalf("%q at %s: Open=%v, want %v", text, at, got, want)
			}
			next := s.NextOpen(at)
			if next.Before(at) || !s.Open(next) {
				t.Fatalf("%q at %s: NextOpen=%s (open=%v)", text, at, next, s.Open(next))
			}
			for m := at; m.Before(next); m = m.Add(15 * time.Minute) {
				if s.Open(m) {
					t.Fatalf("%q at %s: open at %s, before NextOpen %s", text, at, m, next)
				}
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, ok := range []string{
		"Sat,Sun 02:00-06:00 Europe/Berlin", "mon-fri 22:00-04:00 America/New_York; Sun 00:00-24:00 UTC",
		"daily 01:00-02:00 UTC", "Fri-Mon 23:30-01:00 Asia/Tokyo", " Sat 02:00-06:00 UTC ; ",
	} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", ";", "Sat 02:00-06:00", "Sat 2:00-06:00 UTC", "Sat 02:00-02:00 UTC", "Sat 24:00-02:00 UTC",
		"Sat 02:60-03:00 UTC", "Saturday 02:00-06:00 UTC", "Sat 02:00-06:00 Mars/Olympus", "Sat 02:00-06:00 Local",
		"Sat 02:00 06:00 UTC", "Sat,,Sun 02:00-06:00 UTC", "Sat 02:00-06:00 UTC extra", "Mon-Xyz 02:00-06:00 UTC",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// Daylight saving: a window is wall-clock time in its zone, on the day
// the clocks change too.
func TestDaylightSaving(t *testing.T) {
	s, err := Parse("Sun 01:00-05:00 Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// 2026-03-29: clocks go from 02:00 to 03:00.
	if !s.Open(time.Date(2026, 3, 29, 4, 30, 0, 0, berlin)) || s.Open(time.Date(2026, 3, 29, 5, 0, 0, 0, berlin)) {
		t.Error("the window ends at 05:00 wall-clock on the day clocks spring forward")
	}
	next := s.NextOpen(time.Date(2026, 10, 24, 12, 0, 0, 0, berlin))
	if want := time.Date(2026, 10, 25, 1, 0, 0, 0, berlin); !next.Equal(want) {
		t.Errorf("NextOpen = %s, want %s", next, want)
	}
}
