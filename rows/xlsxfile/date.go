package xlsxfile

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rowfate/rowfate/rows"
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

// xlsxSerialText renders an Excel serial number as text of the given kind:
// 2006-01-02 for a date, 15:04:05 for a time, 2006-01-02 15:04:05 for both
// (with milliseconds when there are any), converted by rows.ExcelSerialTime
// in the workbook's date system. ok is false when the number is no date
// Excel could show (negative, past 9999, not a number): Excel shows ####,
// and the caller keeps the number. err is a serial Excel does show, as a
// day no calendar has (1900-02-29, 1900-01-00): guessing a neighbouring
// day would change the data, so the caller makes it a row error.
func xlsxSerialText(raw string, kind xlsxDateKind, date1904 bool) (text string, ok bool, err error) {
	v, perr := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return "", false, nil
	}
	if kind == xlsxTime && v >= 0 {
		// A time of day alone is a fraction of day 0, which neither date
		// system has as a date: it needs no date conversion.
		if ms := math.Round(v * 86_400_000); ms < 86_400_000 {
			return xlsxClockText(time.Time{}.Add(time.Duration(ms) * time.Millisecond)), true, nil
		}
	}
	t, err := rows.ExcelSerialTime(v, date1904)
	switch {
	case errors.Is(err, rows.ErrExcelDateRange):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	if kind == xlsxDate {
		return t.Format("2006-01-02"), true, nil
	}
	return t.Format("2006-01-02") + " " + xlsxClockText(t), true, nil
}

// xlsxClockText renders t's time of day, with milliseconds only when
// there are any.
func xlsxClockText(t time.Time) string {
	if t.Nanosecond() == 0 {
		return t.Format("15:04:05")
	}
	return t.Format("15:04:05.000")
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
