package taskring

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// formatInstant writes t as Python's datetime.isoformat() does for an aware
// datetime (sdk/python/taskring/_envelope.py format_instant): the caller's own
// offset, "+00:00" rather than "Z" for UTC, and microseconds only when there
// are any. Go keeps nanoseconds; they are cut to microseconds, Python's
// resolution, so both SDKs put the same text on the wire.
func formatInstant(t time.Time) string {
	t = t.Truncate(time.Microsecond)
	layout := "2006-01-02T15:04:05"
	if t.Nanosecond() != 0 {
		layout += ".000000"
	}
	if _, off := t.Zone(); off%60 != 0 {
		layout += "-07:00:00"
	} else {
		layout += "-07:00"
	}
	return t.Format(layout)
}

// rfc3339 is the grammar the server accepts (dispatcher/validation.py
// parse_rfc3339), with the offset required: an instant without one names no
// moment.
var rfc3339 = regexp.MustCompile(`^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$`)

// parseInstant reads an RFC 3339 time from the server ("Z" or an offset);
// empty text is the zero time. Fractions beyond nanoseconds are not allowed by
// the grammar; the result keeps the offset it was written with.
func parseInstant(text string) (time.Time, error) {
	if text == "" {
		return time.Time{}, nil
	}
	m := rfc3339.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, &ProtocolError{Msg: fmt.Sprintf("malformed time %q", text)}
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	frac := m[7]
	nanos := 0
	if frac != "" {
		for len(frac) < 9 {
			frac += "0"
		}
		nanos = n(frac)
	}
	loc := time.UTC
	if m[8] == "" {
		off := (n(m[10])*60 + n(m[11])) * 60
		if m[9] == "-" {
			off = -off
		}
		loc = time.FixedZone("", off)
	}
	year, month, day, hour, minute, sec := n(m[1]), n(m[2]), n(m[3]), n(m[4]), n(m[5]), n(m[6])
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, loc)
	// time.Date normalises out-of-range fields (Feb 30 -> Mar 2); the wire must not.
	if t.Year() != year || int(t.Month()) != month || t.Day() != day || t.Hour() != hour ||
		t.Minute() != minute || t.Second() != sec {
		return time.Time{}, &ProtocolError{Msg: fmt.Sprintf("time %q is out of range", text)}
	}
	return t, nil
}

// toMillis is whole milliseconds, rounded up: a delay must never make a task run early.
func toMillis(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}
