package rows

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DateOrder is the order of day and month in a numeric date such as
// 01/02/2025, which reads as 1 February (day first) or January 2 (month
// first). A year written first (2025/02/01) is always year, month, day.
type DateOrder string

// The orders.
const (
	// DateOrderUnknown: not declared, and nothing in the file settles it.
	DateOrderUnknown DateOrder = ""
	// DMY is day, month, year: 31/12/2025 and 31.12.2025.
	DMY DateOrder = "dmy"
	// MDY is month, day, year: 12/31/2025.
	MDY DateOrder = "mdy"
)

// ParseDateOrder reads a date order as a user types it: dmy or mdy.
func ParseDateOrder(s string) (DateOrder, error) {
	switch o := DateOrder(strings.ToLower(strings.TrimSpace(s))); o {
	case DMY, MDY, DateOrderUnknown:
		return o, nil
	}
	return "", fmt.Errorf("date order %q: want dmy (31/12/2025) or mdy (12/31/2025)", s)
}

// Words says the order in words.
func (o DateOrder) Words() string {
	switch o {
	case DMY:
		return "day first (day/month/year)"
	case MDY:
		return "month first (month/day/year)"
	}
	return "undecided"
}

var (
	// numericDate is day and month in either order, then a four-digit
	// year, with one separator repeated, and an optional time of day.
	numericDate = regexp.MustCompile(`^(\d{1,2})([/.\-])(\d{1,2})([/.\-])(\d{4})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$`)
	// yearFirst is year, month, day with / or . (ISO's dashes are a
	// layout); never ambiguous.
	yearFirst = regexp.MustCompile(`^(\d{4})([/.\-])(\d{1,2})([/.\-])(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$`)
	// shortYear is a numeric date with a two-digit year: its century
	// would be a guess.
	shortYear = regexp.MustCompile(`^\d{1,2}[/.\-]\d{1,2}[/.\-]\d{2}$`)
	// dayMonthName is 31-Dec-2025, 31 Dec 2025, 31. December 2025.
	dayMonthName = regexp.MustCompile(`^(\d{1,2})\.?[ \-/]([A-Za-z]{3,9})\.?[ \-/,]+(\d{4})$`)
	// monthNameDay is Dec 31, 2025 and December 31 2025.
	monthNameDay = regexp.MustCompile(`^([A-Za-z]{3,9})\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})$`)
	// yearMonthName is 2025-Dec-31.
	yearMonthName = regexp.MustCompile(`^(\d{4})-([A-Za-z]{3,9})-(\d{1,2})$`)
)

// months are English month names and their three-letter forms: a fixed
// table, never written after it is built.
var months = func() map[string]time.Month {
	out := map[string]time.Month{"sept": time.September}
	for m := time.January; m <= time.December; m++ {
		n := strings.ToLower(m.String())
		out[n] = m
		out[n[:3]] = m
	}
	return out
}()

// DateClue is what one value tells about a file's date order.
type DateClue uint8

// The clues.
const (
	// DateClueNone: the value is not a numeric day-month date, or both
	// orders give the same date (05/05/2025).
	DateClueNone DateClue = iota
	// DateClueDayFirst: only day first reads it (13/02/2025).
	DateClueDayFirst
	// DateClueMonthFirst: only month first reads it (02/13/2025).
	DateClueMonthFirst
	// DateClueAmbiguous: both orders read it, as two different dates
	// (01/02/2025).
	DateClueAmbiguous
)

// DateClueOf classifies one value.
func DateClueOf(s string) DateClue {
	m := numericDate.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[2] != m[4] {
		return DateClueNone
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[3])
	switch {
	case a == b || a == 0 || b == 0 || (a > 12 && b > 12):
		return DateClueNone
	case a > 12:
		return DateClueDayFirst
	case b > 12:
		return DateClueMonthFirst
	}
	return DateClueAmbiguous
}

// errAmbiguousDate is a date whose day and month could be either way round.
type errAmbiguousDate struct{ s string }

func (e *errAmbiguousDate) Error() string {
	a, b := e.parts()
	return fmt.Sprintf("%q could be %s or %s, and nothing in the file says which: import with the date order dmy or mdy", e.s, a, b)
}

// Hints names the option that settles it.
func (e *errAmbiguousDate) Hints() []Hint {
	return []Hint{{Option: OptionDateOrder, Values: []string{"dmy", "mdy"}}}
}

func (e *errAmbiguousDate) parts() (string, string) {
	m := numericDate.FindStringSubmatch(e.s)
	x, _ := strconv.Atoi(m[1])
	y, _ := strconv.Atoi(m[3])
	return fmt.Sprintf("%d %s", x, time.Month(y)), fmt.Sprintf("%s %d", time.Month(x), y)
}

// parseDate reads the date forms spreadsheets and clients write that no
// fixed layout covers: numeric day and month in the given order (when the
// order is unknown, a value only one order reads is read that way, and
// one both orders read differently is an error), year first with / or .,
// and English month names. It returns ok false for a value of none of
// these forms.
func parseDate(s string, order DateOrder) (t time.Time, ok bool, err error) {
	if m := numericDate.FindStringSubmatch(s); m != nil && m[2] == m[4] {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[3])
		y, _ := strconv.Atoi(m[5])
		day, month := a, b
		switch order {
		case MDY:
			day, month = b, a
		case DateOrderUnknown:
			switch DateClueOf(s) {
			case DateClueMonthFirst:
				day, month = b, a
			case DateClueAmbiguous:
				return time.Time{}, true, &errAmbiguousDate{s: s}
			}
		}
		t, err := civil(y, month, day, m[6:])
		if err != nil {
			return time.Time{}, true, fmt.Errorf("%q is not a date %s: %v", s, order.readAs(), err)
		}
		return t, true, nil
	}
	if m := yearFirst.FindStringSubmatch(s); m != nil && m[2] == m[4] {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[3])
		d, _ := strconv.Atoi(m[5])
		t, err := civil(y, mo, d, m[6:])
		if err != nil {
			return time.Time{}, true, fmt.Errorf("%q is not a date: %v", s, err)
		}
		return t, true, nil
	}
	if shortYear.MatchString(s) {
		return time.Time{}, true, fmt.Errorf("%q has a two-digit year, and its century would be a guess: write the year in full", s)
	}
	var y, d int
	var mon string
	if m := dayMonthName.FindStringSubmatch(s); m != nil {
		d, _ = strconv.Atoi(m[1])
		mon = m[2]
		y, _ = strconv.Atoi(m[3])
	} else if m := monthNameDay.FindStringSubmatch(s); m != nil {
		mon = m[1]
		d, _ = strconv.Atoi(m[2])
		y, _ = strconv.Atoi(m[3])
	} else if m := yearMonthName.FindStringSubmatch(s); m != nil {
		y, _ = strconv.Atoi(m[1])
		mon = m[2]
		d, _ = strconv.Atoi(m[3])
	} else {
		return time.Time{}, false, nil
	}
	mo, known := months[strings.ToLower(mon)]
	if !known {
		return time.Time{}, true, fmt.Errorf("%q: %q is not an English month name", s, mon)
	}
	t, err = civil(y, int(mo), d, nil)
	if err != nil {
		return time.Time{}, true, fmt.Errorf("%q is not a date: %v", s, err)
	}
	return t, true, nil
}

func (o DateOrder) readAs() string {
	if o == DateOrderUnknown {
		return ""
	}
	return "read " + o.Words()
}

// civil builds a UTC time, refusing what time.Date would normalise (31
// February is not 3 March).
func civil(y, month, day int, clock []string) (time.Time, error) {
	if month < 1 || month > 12 {
		return time.Time{}, fmt.Errorf("there is no month %d", month)
	}
	var h, mi, sec int
	if len(clock) == 3 && clock[0] != "" {
		h, _ = strconv.Atoi(clock[0])
		mi, _ = strconv.Atoi(clock[1])
		sec, _ = strconv.Atoi(clock[2])
		if h > 23 || mi > 59 || sec > 59 {
			return time.Time{}, fmt.Errorf("%02d:%02d:%02d is not a time of day", h, mi, sec)
		}
	}
	t := time.Date(y, time.Month(month), day, h, mi, sec, 0, time.UTC)
	if t.Day() != day || int(t.Month()) != month {
		return time.Time{}, fmt.Errorf("%s has no day %d", time.Month(month), day)
	}
	return t, nil
}
