package rows

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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

// strptimeDirectives are the strptime directives Strptime reads.
const strptimeDirectives = "%Y %y %m %d %H %I %M %S %f %p %b %B %a %A %z %Z %%"

// CheckStrptime reports why a strptime pattern cannot be read: a
// directive Strptime does not know, or no year, month or day (which a
// date would otherwise take from nowhere: Python's strptime makes it
// 1900).
func CheckStrptime(pattern string) error {
	seen := map[byte]bool{}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '%' {
			continue
		}
		if i+1 == len(pattern) {
			return fmt.Errorf("date pattern %q ends with a lone %%", pattern)
		}
		i++
		if !strings.Contains(strptimeDirectives, "%"+string(pattern[i])) {
			return fmt.Errorf("date pattern %q: %%%c is not a directive Rowfate reads (%s)", pattern, pattern[i], strptimeDirectives)
		}
		seen[pattern[i]] = true
	}
	switch {
	case !seen['Y'] && !seen['y']:
		return fmt.Errorf("date pattern %q has no year (%%Y or %%y)", pattern)
	case !seen['m'] && !seen['b'] && !seen['B']:
		return fmt.Errorf("date pattern %q has no month (%%m, %%b or %%B)", pattern)
	case !seen['d']:
		return fmt.Errorf("date pattern %q has no day (%%d)", pattern)
	case seen['I'] != seen['p']:
		return fmt.Errorf("date pattern %q: %%I (a 12-hour clock) and %%p (AM or PM) go together", pattern)
	}
	return nil
}

// StrptimeHasTime reports whether a pattern reads a time of day or an
// offset, which a date without a time would drop.
func StrptimeHasTime(pattern string) bool {
	for _, d := range []string{"%H", "%I", "%M", "%S", "%f", "%p", "%z", "%Z"} {
		if strings.Contains(strings.ReplaceAll(pattern, "%%", ""), d) {
			return true
		}
	}
	return false
}

// strptimeValue is what a strptime pattern read so far.
type strptimeValue struct {
	year, month, day, hour, min, sec, nsec int
	pm, twelve                             bool
	zone                                   *time.Location
}

// Strptime reads s in a strptime pattern, the syntax of C's and Python's
// strptime that a Table Schema's date formats use (%d/%m/%y): numbers of
// one or two digits where Python takes them (%d %m %H %I %M %S), %y as
// POSIX says (69-99 is 1969-1999, 00-68 is 2000-2068), month and weekday
// names in English, any case, a space in the pattern matching one or
// more. Without %z or %Z the time is UTC; with them it is the instant
// they name. %Z reads only UTC and GMT: a zone's abbreviation does not
// say its offset (EST is two places).
func Strptime(pattern, s string) (time.Time, error) {
	fail := func(why string) (time.Time, error) {
		return time.Time{}, fmt.Errorf("%q is not a date in the form %s: %s", s, pattern, why)
	}
	v := strptimeValue{month: 1, day: 1, zone: time.UTC}
	i := 0
	for p := 0; p < len(pattern); p++ {
		c := pattern[p]
		if c == ' ' {
			n := len(s[i:]) - len(strings.TrimLeft(s[i:], " "))
			if n == 0 {
				return fail("a space is missing")
			}
			i += n
			continue
		}
		if c != '%' || p+1 == len(pattern) || pattern[p+1] == '%' {
			if i >= len(s) || s[i] != c {
				return fail(fmt.Sprintf("%q is missing at position %d", string(c), i+1))
			}
			i++
			p += strings.Count(pattern[p:min(p+2, len(pattern))], "%%")
			continue
		}
		p++
		n, err := v.directive(pattern[p], s[i:])
		if err != nil {
			return fail(err.Error())
		}
		i += n
	}
	if i < len(s) {
		return fail(fmt.Sprintf("%q is left over", s[i:]))
	}
	return v.time(fail)
}

// directive reads one directive at the start of s; it returns how many
// bytes it read.
func (v *strptimeValue) directive(d byte, s string) (int, error) {
	num := func(minDigits, maxDigits int, dst *int) (int, error) {
		n := 0
		for n < maxDigits && n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n < minDigits {
			return 0, fmt.Errorf("%%%c wants %d to %d digits", d, minDigits, maxDigits)
		}
		*dst, _ = strconv.Atoi(s[:n])
		return n, nil
	}
	// The numbers of one or two digits, as Python's strptime reads them.
	short := map[byte]*int{'m': &v.month, 'd': &v.day, 'H': &v.hour, 'I': &v.hour, 'M': &v.min, 'S': &v.sec}
	if dst, ok := short[d]; ok {
		v.twelve = v.twelve || d == 'I'
		return num(1, 2, dst)
	}
	switch d {
	case 'Y':
		return num(4, 4, &v.year)
	case 'y':
		n, err := num(2, 2, &v.year)
		if v.year < 69 {
			v.year += 2000
		} else {
			v.year += 1900
		}
		return n, err
	case 'f':
		n, err := num(1, 6, &v.nsec)
		for k := n; k < 9; k++ {
			v.nsec *= 10
		}
		return n, err
	case 'p':
		if len(s) >= 2 && (strings.EqualFold(s[:2], "AM") || strings.EqualFold(s[:2], "PM")) {
			v.pm = strings.EqualFold(s[:2], "PM")
			return 2, nil
		}
		return 0, errors.New("%p wants AM or PM")
	case 'b', 'B':
		return v.monthName(d, s)
	case 'a', 'A':
		return weekdayName(d, s)
	case 'z':
		return v.offset(s)
	case 'Z':
		for _, z := range []string{"UTC", "GMT"} {
			if len(s) >= 3 && strings.EqualFold(s[:3], z) {
				return 3, nil
			}
		}
		return 0, errors.New("%Z reads UTC or GMT only: a zone's name does not say its offset (write the offset with %z)")
	}
	return 0, fmt.Errorf("%%%c is not a directive Rowfate reads", d)
}

// letters is the run of ASCII letters at the start of s.
func letters(s string) string {
	n := 0
	for n < len(s) && (s[n] >= 'a' && s[n] <= 'z' || s[n] >= 'A' && s[n] <= 'Z') {
		n++
	}
	return s[:n]
}

// monthName reads %b (Jan) or %B (January).
func (v *strptimeValue) monthName(d byte, s string) (int, error) {
	i, n := englishName(s, 12, func(i int) string { return time.Month(i + 1).String() }, d == 'b')
	switch {
	case i >= 0:
		v.month = i + 1
		return n, nil
	case d == 'b':
		return 0, errors.New("%b wants a month's three-letter English name (Jan)")
	}
	return 0, errors.New("%B wants a month's English name (January)")
}

// weekdayName reads %a (Mon) or %A (Monday), which says nothing the date
// does not.
func weekdayName(d byte, s string) (int, error) {
	if i, n := englishName(s, 7, func(i int) string { return time.Weekday(i).String() }, d == 'a'); i >= 0 {
		return n, nil
	}
	return 0, fmt.Errorf("%%%c wants a weekday's English name", d)
}

// englishName matches the letters at the start of s, in any case, with
// one of count names (their first three letters when short): the name's
// index and the bytes read, or -1.
func englishName(s string, count int, name func(i int) string, short bool) (int, int) {
	w := letters(s)
	for i := range count {
		n := name(i)
		if short {
			n = n[:3]
		}
		if strings.EqualFold(w, n) {
			return i, len(w)
		}
	}
	return -1, 0
}

// offset reads %z: Z, or +hhmm or +hh:mm.
func (v *strptimeValue) offset(s string) (int, error) {
	if strings.HasPrefix(s, "Z") {
		return 1, nil
	}
	m := zoneOffset.FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New("%z wants Z, +hhmm or +hh:mm")
	}
	h, _ := strconv.Atoi(m[2])
	mi, _ := strconv.Atoi(m[3])
	if h > 23 || mi > 59 {
		return 0, fmt.Errorf("%s is not an offset", m[0])
	}
	secs := (h*60 + mi) * 60
	if m[1] == "-" {
		secs = -secs
	}
	v.zone = time.FixedZone("", secs)
	return len(m[0]), nil
}

var zoneOffset = regexp.MustCompile(`^([+-])(\d{2}):?(\d{2})`)

// time checks what was read and makes it the instant it names, in UTC.
func (v *strptimeValue) time(fail func(string) (time.Time, error)) (time.Time, error) {
	if v.twelve {
		if v.hour < 1 || v.hour > 12 {
			return fail(fmt.Sprintf("%d is not an hour of a 12-hour clock", v.hour))
		}
		v.hour %= 12
		if v.pm {
			v.hour += 12
		}
	}
	if v.hour > 23 || v.min > 59 || v.sec > 59 {
		return fail(fmt.Sprintf("%02d:%02d:%02d is not a time of day", v.hour, v.min, v.sec))
	}
	if v.month < 1 || v.month > 12 {
		return fail(fmt.Sprintf("there is no month %d", v.month))
	}
	t := time.Date(v.year, time.Month(v.month), v.day, v.hour, v.min, v.sec, v.nsec, v.zone)
	if t.Day() != v.day {
		return fail(fmt.Sprintf("%s has no day %d", time.Month(v.month), v.day))
	}
	return t.UTC(), nil
}

// DateFormat is what a file's compact dates mean, when its date columns
// write digits only (070125, 20250107): they are declared, never guessed
// (the import option date_format). A named compact form — ddmmyy,
// yymmdd, mmddyy, ddmmyyyy, yyyymmdd, mmddyyyy — reads exactly that many
// digits; serial reads plain numbers as Excel serial dates (the 1900
// system, or the column's excel tag); anything with a % is a strptime
// pattern (Strptime), such as %d.%m.%Y. A two-digit year follows the
// POSIX rule: 69-99 is 1969-1999, 00-68 is 2000-2068.
//
// It applies to every date column of the file, after the column's own
// layouts; a column with its own pattern (the strptime tag, a Table
// Schema field's format) reads its pattern only. Without it, a cell of
// six or eight digits in a date column is a bad_date whose hints name the
// forms that would read it: such a cell is a compact date in some order
// or a mistake, never an Excel serial (as one, 070125 would be the year
// 2091).
type DateFormat string

// The date formats that are not patterns.
const (
	// DateFormatUndeclared: compact dates are refused, naming the forms.
	DateFormatUndeclared DateFormat = ""
	// DateFormatSerial: plain numbers are Excel serial dates.
	DateFormatSerial DateFormat = "serial"
)

// compactForms are the named compact forms in the order a hint lists them,
// by their number of digits.
var compactForms = map[int][]DateFormat{
	6: {"ddmmyy", "yymmdd", "mmddyy"},
	8: {"ddmmyyyy", "yyyymmdd", "mmddyyyy"},
}

// ParseDateFormat reads a date format as a user types it: a compact form
// (case does not matter), serial, or a strptime pattern.
func ParseDateFormat(s string) (DateFormat, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "%") {
		if err := CheckStrptime(s); err != nil {
			return "", err
		}
		return DateFormat(s), nil
	}
	f := DateFormat(strings.ToLower(s))
	if f == DateFormatUndeclared || f == DateFormatSerial || f.compact() {
		return f, nil
	}
	return "", fmt.Errorf("date format %q: want ddmmyy, yymmdd, mmddyy, ddmmyyyy, yyyymmdd, mmddyyyy, serial or a strptime pattern such as %%d.%%m.%%Y", s)
}

func (f DateFormat) compact() bool {
	return slices.Contains(compactForms[len(f)], f)
}

func (f DateFormat) pattern() bool { return strings.Contains(string(f), "%") }

// allDigits reports whether s is ASCII digits only, at least one.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// readCompact reads s, all digits, in the compact form f.
func (f DateFormat) readCompact(s string) (time.Time, error) {
	if len(s) != len(f) || !allDigits(s) {
		return time.Time{}, fmt.Errorf("%q is not a date in the form %s (%d digits)", s, f, len(f))
	}
	var y, mo, d int
	for i := 0; i < len(f); i += 2 {
		n, _ := strconv.Atoi(s[i : i+2])
		switch f[i] {
		case 'd':
			d = n
		case 'm':
			mo = n
		case 'y':
			y = y*100 + n
		}
	}
	if strings.Count(string(f), "y") == 2 {
		y = posixYear(y)
	}
	t, err := civil(y, mo, d, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date in the form %s: %v", s, f, err)
	}
	return t, nil
}

// posixYear is a two-digit year as POSIX strptime reads it: 69-99 is
// 1969-1999, 00-68 is 2000-2068.
func posixYear(yy int) int {
	if yy < 69 {
		return 2000 + yy
	}
	return 1900 + yy
}

// read reads s, which no layout of its column read, under the file's
// declared date format. done is false when the format leaves s to the
// usual forms (numeric dates in the file's order, month names, Excel
// serials); err is a bad_date conversion error.
func (f DateFormat) read(s string, excel excelSystem, number NumberFormat) (t time.Time, done bool, err error) {
	switch {
	case f.pattern():
		t, err := Strptime(string(f), s)
		if err != nil {
			return time.Time{}, true, &convError{code: CodeBadDate, msg: err.Error() + " (the file's declared date format)"}
		}
		return t, true, nil
	case f == DateFormatSerial:
		p := serialPoint(s, number)
		if !looksSerial(p) {
			return time.Time{}, false, nil
		}
		n, err := strconv.ParseFloat(p, 64)
		if err == nil {
			t, err = ExcelSerialTime(n, excel == excel1904)
		}
		if err != nil {
			return time.Time{}, true, &convError{code: CodeBadDate, msg: fmt.Sprintf("%q: %v", s, err)}
		}
		return t, true, nil
	case f.compact():
		if !looksSerial(s) { // digits, perhaps with a point
			return time.Time{}, false, nil
		}
		t, err := f.readCompact(s)
		if err != nil {
			return time.Time{}, true, &convError{code: CodeBadDate, msg: err.Error() + " (the file's declared date format)"}
		}
		return t, true, nil
	}
	if forms := compactForms[len(s)]; forms != nil && allDigits(s) {
		return time.Time{}, true, undeclaredCompact(s, forms)
	}
	return time.Time{}, false, nil
}

// undeclaredCompact is the error of a compact date without a declared
// format: the readings it has, and the forms that give them as hints.
func undeclaredCompact(s string, forms []DateFormat) error {
	var readings []string
	var values []string
	for _, f := range forms {
		if t, err := f.readCompact(s); err == nil {
			readings = append(readings, fmt.Sprintf("%s as %s", t.Format("2006-01-02"), f))
			values = append(values, string(f))
		}
	}
	if len(values) == 0 {
		return &convError{code: CodeBadDate, msg: fmt.Sprintf("%q is not a date: it is no compact date (%s) and it is not read as an Excel serial date", s, joinForms(forms))}
	}
	return &convError{code: CodeBadDate,
		msg: fmt.Sprintf("%q is a compact date whose form the file does not declare (it would be %s): import with the date format that says how it is written, or write it as YYYY-MM-DD",
			s, strings.Join(readings, ", ")),
		hints: []Hint{{Option: OptionDateFormat, Values: values}}}
}

func joinForms(forms []DateFormat) string {
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = string(f)
	}
	return strings.Join(out, ", ")
}

// serialPoint writes a plain number of a file with a decimal comma
// (45678,5: a workbook's typed number under such a locale) with a point,
// the form a serial date is read from; any other value is returned as it
// is.
func serialPoint(s string, number NumberFormat) string {
	if number.decimal() == ',' && strings.Count(s, ",") == 1 && !strings.Contains(s, ".") {
		return strings.Replace(s, ",", ".", 1)
	}
	return s
}
