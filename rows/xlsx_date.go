package rows

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// xlsxDateKind is what a number format says a number means.
type xlsxDateKind uint8

const (
	xlsxNumber   xlsxDateKind = iota
	xlsxDate                  // a date without a time of day
	xlsxTime                  // a time of day without a date
	xlsxDateTime              // both
)

// xlsxBuiltinKind classifies Excel's built-in number formats by id (ECMA-376
// part 1, 18.8.30; 27-36 and 50-58 are the East Asian date formats).
func xlsxBuiltinKind(id int) xlsxDateKind {
	switch {
	case id >= 14 && id <= 17, id >= 27 && id <= 31, id >= 34 && id <= 36, id >= 50 && id <= 58:
		return xlsxDate
	case id >= 18 && id <= 21, id == 32, id == 33, id >= 45 && id <= 47:
		return xlsxTime
	case id == 22:
		return xlsxDateTime
	}
	return xlsxNumber
}

// xlsxFormatKind classifies a custom number format code by the date and time
// tokens it has outside quoted text, escapes and [colour] or [$-locale]
// brackets. Only the first section (positive numbers) counts. An elapsed
// time ([h]:mm) is a time.
func xlsxFormatKind(code string) xlsxDateKind {
	var date, clock bool
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch c {
		case ';':
			i = len(code)
			continue
		case '"':
			if j := strings.IndexByte(code[i+1:], '"'); j >= 0 {
				i += j + 1
			} else {
				i = len(code)
			}
			continue
		case '\\', '_', '*':
			i++ // the next character is literal (or padding)
			continue
		case '[':
			j := strings.IndexByte(code[i:], ']')
			if j < 0 {
				i = len(code)
				continue
			}
			inner := strings.ToLower(code[i+1 : i+j])
			if inner != "" && strings.Trim(inner, "hms") == "" {
				clock = true // elapsed time: [h], [mm], [ss]
			}
			i += j
			continue
		}
		switch c | 0x20 { // lower-case ASCII letters
		case 'y', 'd':
			date = true
		case 'h', 's':
			clock = true
		case 'm':
			// m is a month unless it follows an hour or precedes seconds;
			// either way the format is a date or a time.
			if xlsxMinute(code, i) {
				clock = true
			} else {
				date = true
			}
		case 'a':
			switch rest := strings.ToLower(code[i:]); {
			case strings.HasPrefix(rest, "am/pm"):
				clock = true
				i += len("am/pm") - 1
			case strings.HasPrefix(rest, "a/p"):
				clock = true
				i += len("a/p") - 1
			}
		case 'e':
			// "e" is a year in East Asian formats, but also the exponent of
			// 0.00E+00; only the former stands alone.
			if i+1 >= len(code) || (code[i+1] != '+' && code[i+1] != '-') {
				date = true
			}
		case 'g':
			// General, or an era (gg); General is a number.
			if strings.HasPrefix(strings.ToLower(code[i:]), "general") {
				i += len("general") - 1
			} else {
				date = true
			}
		}
	}
	switch {
	case date && clock:
		return xlsxDateTime
	case date:
		return xlsxDate
	case clock:
		return xlsxTime
	}
	return xlsxNumber
}

// xlsxMinute reports whether the m at code[i] means minutes: the last
// letter token before it is an h, or the next one is an s.
func xlsxMinute(code string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		if code[j] == ']' {
			return true // after an elapsed [h]
		}
		c := code[j] | 0x20
		if c == 'h' {
			return true
		}
		if c >= 'a' && c <= 'z' && c != 'm' {
			break
		}
	}
	for j := i + 1; j < len(code); j++ {
		c := code[j] | 0x20
		if c == 's' {
			return true
		}
		if c >= 'a' && c <= 'z' && c != 'm' {
			break
		}
	}
	return false
}

// Epochs of Excel's two date systems. In the 1900 system day 1 is
// 1900-01-01 and day 60 is the 1900-02-29 that never was (Lotus 1-2-3's bug,
// kept by Excel), so from day 61 on the epoch is 1899-12-30. In the 1904
// system (old Mac Excel) day 0 is 1904-01-01.
var (
	xlsxEpoch1900Early = time.Date(1899, 12, 31, 0, 0, 0, 0, time.UTC)
	xlsxEpoch1900      = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	xlsxEpoch1904      = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
)

// xlsxMaxSerial is 9999-12-31 in the 1900 system, Excel's last date.
const xlsxMaxSerial = 2958465

// xlsxSerialText renders an Excel serial number as text of the given kind:
// 2006-01-02 for a date, 15:04:05 for a time, 2006-01-02 15:04:05 for both
// (with milliseconds when there are any). ok is false when the number is
// no date Excel could show (negative, past 9999, not a number); the caller
// then keeps the number.
func xlsxSerialText(raw string, kind xlsxDateKind, date1904 bool) (string, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > xlsxMaxSerial+1 {
		return "", false
	}
	days := math.Floor(v)
	ms := math.Round((v - days) * 86_400_000)
	if ms >= 86_400_000 {
		days++
		ms = 0
	}
	clock := time.Duration(ms) * time.Millisecond
	clockText := func() string {
		t := time.Time{}.Add(clock)
		if ms == math.Trunc(ms/1000)*1000 {
			return t.Format("15:04:05")
		}
		return t.Format("15:04:05.000")
	}
	if kind == xlsxTime && days == 0 {
		return clockText(), true
	}
	var d time.Time
	switch {
	case date1904:
		d = xlsxEpoch1904.AddDate(0, 0, int(days))
	case days == 60:
		// Excel shows the phantom 1900-02-29. No calendar has it, so a
		// date field will refuse it, as it should.
		if kind == xlsxDate {
			return "1900-02-29", true
		}
		return "1900-02-29 " + clockText(), true
	case days == 0:
		// Excel shows 1900-01-00: no date either.
		if kind == xlsxDate {
			return "1900-01-00", true
		}
		if kind == xlsxTime {
			return clockText(), true
		}
		return "1900-01-00 " + clockText(), true
	case days < 60:
		d = xlsxEpoch1900Early.AddDate(0, 0, int(days))
	default:
		d = xlsxEpoch1900.AddDate(0, 0, int(days))
	}
	if d.Year() > 9999 {
		return "", false
	}
	if kind == xlsxDate {
		return d.Format("2006-01-02"), true
	}
	return d.Format("2006-01-02") + " " + clockText(), true
}

// xlsxISODate normalises the value of a t="d" cell (an ISO 8601 date, time
// or both, as strict OOXML writes them) to the forms serial dates take.
func xlsxISODate(v string) string {
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02"} {
		t, err := time.Parse(l, v)
		if err != nil {
			continue
		}
		if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
			return t.Format("2006-01-02")
		}
		if t.Nanosecond() != 0 {
			return t.Format("2006-01-02 15:04:05.000")
		}
		return t.Format("2006-01-02 15:04:05")
	}
	if t, err := time.Parse("15:04:05", v); err == nil {
		return t.Format("15:04:05")
	}
	return v
}

// xlsxNumberText renders a raw numeric cell: as stored, except that an
// exponent (1E-3, as some writers store small and large numbers) is spelled
// out and trailing zeros of a fraction are dropped, so that an int or
// decimal field can parse it.
func xlsxNumberText(raw string) string {
	if _, err := strconv.ParseFloat(raw, 64); err != nil {
		return raw // not a number after all: leave it be
	}
	if !strings.ContainsAny(raw, "eE") {
		if strings.Contains(raw, ".") {
			// 20.000 (excelize pads what it cuts to 15 digits) is 20.
			raw = strings.TrimSuffix(strings.TrimRight(raw, "0"), ".")
		}
		return raw
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return raw
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
