// Package schedule parses weekly time windows, as an admin writes a
// reboot window for node maintenance (the shape of kured's reboot days,
// start and end times and time zone), and answers whether a moment is
// inside one and when the next one opens.
//
//	Sat,Sun 02:00-06:00 Europe/Berlin
//	Mon-Fri 22:00-04:00 America/New_York; Sun 00:00-24:00 UTC
//
// A window opens on each day listed at its start, in its time zone, and
// ends at its end time: the same day, or the next when the end is not
// after the start (it crosses midnight). Wall-clock times follow the
// zone's daylight-saving rules.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// Time zones resolve in a container without a zoneinfo database.
	_ "time/tzdata"
)

// Accepted describes the format, for messages.
const Accepted = `windows separated by ";", each "DAYS HH:MM-HH:MM ZONE": DAYS is "daily" or day names and ranges (Mon..Sun, e.g. "Sat,Sun" or "Mon-Fri"), times are 24-hour (end "24:00" allowed; an end not after the start crosses midnight), ZONE is an IANA time zone such as "UTC" or "Europe/Berlin"`

// Schedule is a set of weekly windows; the zero value has none.
type Schedule struct {
	windows []window
	text    string
}

type window struct {
	days       [7]bool // by time.Weekday
	start, end int     // minutes after midnight; end in (0, 1440]
	loc        *time.Location
}

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// Parse reads s; an error names what is wrong and what is accepted.
func Parse(s string) (Schedule, error) {
	out := Schedule{text: strings.TrimSpace(s)}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		w, err := parseWindow(part)
		if err != nil {
			return Schedule{}, fmt.Errorf("window %q: %w", part, err)
		}
		out.windows = append(out.windows, w)
	}
	if len(out.windows) == 0 {
		return Schedule{}, fmt.Errorf("no window: want %s", Accepted)
	}
	return out, nil
}

func parseWindow(s string) (window, error) {
	fields := strings.Fields(s)
	if len(fields) != 3 {
		return window{}, fmt.Errorf("want three fields (days, times, zone), got %d", len(fields))
	}
	var w window
	if err := w.parseDays(fields[0]); err != nil {
		return window{}, err
	}
	from, to, ok := strings.Cut(fields[1], "-")
	if !ok {
		return window{}, fmt.Errorf("times %q: want HH:MM-HH:MM", fields[1])
	}
	var err error
	if w.start, err = clock(from, false); err != nil {
		return window{}, err
	}
	if w.end, err = clock(to, true); err != nil {
		return window{}, err
	}
	if w.start == w.end {
		return window{}, fmt.Errorf("times %q: start and end are the same (a whole day is 00:00-24:00)", fields[1])
	}
	if w.end < w.start {
		w.end += 24 * 60 // crosses midnight
	}
	// Only names a person chose: "Local" would be whatever the process's
	// environment says.
	if fields[2] == "Local" || fields[2] == "" {
		return window{}, fmt.Errorf("zone %q: name an IANA time zone (e.g. UTC, Europe/Berlin)", fields[2])
	}
	if w.loc, err = time.LoadLocation(fields[2]); err != nil {
		return window{}, fmt.Errorf("zone %q is not an IANA time zone (e.g. UTC, Europe/Berlin)", fields[2])
	}
	return w, nil
}

func (w *window) parseDays(s string) error {
	if strings.EqualFold(s, "daily") {
		for i := range w.days {
			w.days[i] = true
		}
		return nil
	}
	for _, item := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(item, "-")
		a, ok := dayNames[strings.ToLower(from)]
		if !ok {
			return fmt.Errorf("day %q: want daily, Mon, Tue, Wed, Thu, Fri, Sat or Sun, or a range such as Mon-Fri", from)
		}
		b := a
		if isRange {
			if b, ok = dayNames[strings.ToLower(to)]; !ok {
				return fmt.Errorf("day %q: want Mon, Tue, Wed, Thu, Fri, Sat or Sun", to)
			}
		}
		for d := a; ; d = (d + 1) % 7 {
			w.days[d] = true
			if d == b {
				break
			}
		}
	}
	return nil
}

// clock parses HH:MM as minutes after midnight; 24:00 only as an end.
func clock(s string, end bool) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) != 2 || len(m) != 2 {
		return 0, fmt.Errorf("time %q: want HH:MM (24-hour)", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	switch {
	case err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59:
		return 0, fmt.Errorf("time %q: want HH:MM (24-hour)", s)
	case hh == 24 && mm == 0 && end:
		return 24 * 60, nil
	case hh > 23:
		return 0, fmt.Errorf("time %q: hours run 00-23 (24:00 only as an end)", s)
	}
	return hh*60 + mm, nil
}

// IsZero reports whether s has no window.
func (s Schedule) IsZero() bool { return len(s.windows) == 0 }

// String is the schedule as written.
func (s Schedule) String() string { return s.text }

// Open reports whether t is inside a window.
func (s Schedule) Open(t time.Time) bool {
	for _, w := range s.windows {
		// A window that opened yesterday may still be open (it crosses
		// midnight).
		for back := 0; back <= 1; back++ {
			start, end := w.bounds(t, -back)
			if w.days[start.Weekday()] && !t.Before(start) && t.Before(end) {
				return true
			}
		}
	}
	return false
}

// NextOpen returns t if a window is open at t, else the start of the next
// window after t; the zero time when s has no window.
func (s Schedule) NextOpen(t time.Time) time.Time {
	if s.Open(t) {
		return t
	}
	var next time.Time
	for _, w := range s.windows {
		for ahead := 0; ahead <= 7; ahead++ {
			start, _ := w.bounds(t, ahead)
			if !w.days[start.Weekday()] || !start.After(t) {
				continue
			}
			if next.IsZero() || start.Before(next) {
				next = start
			}
			break
		}
	}
	return next
}

// bounds is the window's start and end on the day days after t's date in
// the window's zone.
func (w window) bounds(t time.Time, days int) (time.Time, time.Time) {
	local := t.In(w.loc)
	y, m, d := local.Date()
	start := time.Date(y, m, d+days, w.start/60, w.start%60, 0, 0, w.loc)
	end := time.Date(y, m, d+days, w.end/60, w.end%60, 0, 0, w.loc)
	return start, end
}
