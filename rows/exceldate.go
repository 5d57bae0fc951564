package rows

import (
	"errors"
	"math"
	"time"
)

// Excel serial dates. In the 1900 system day 1 is 1900-01-01, and Excel
// (copying Lotus 1-2-3) counts a 1900-02-29 that never was as day 60: days
// from 61 on are one more than the calendar says, so they count from
// 1899-12-30, days 1-59 from 1899-12-31. In the 1904 system (old Mac
// Excel) day 0 is 1904-01-01. A fraction is the time of day, to the
// millisecond. The largest serial either system shows is 9999-12-31.
var (
	excelEpoch1900 = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	excelEpoch1904 = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
	excelLast      = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// ErrExcelDateRange is matched (errors.Is) by ExcelSerialTime's error for a
// serial outside the dates Excel shows at all: negative, past 9999-12-31,
// or not a number. Excel shows such a cell as ####, so a workbook reader
// keeps its number; a serial inside the range that names no real day
// (1900-02-29) is a different error, because Excel shows it as a date.
var ErrExcelDateRange = errors.New("outside the dates Excel shows")

// excelDateError is an error of ExcelSerialTime. Its message reads after
// the value, as in `"60": is Excel's 1900-02-29, a day that does not
// exist`.
type excelDateError struct {
	msg        string
	outOfRange bool
}

func (e *excelDateError) Error() string { return e.msg }

// Is makes an out-of-range error match ErrExcelDateRange.
func (e *excelDateError) Is(target error) bool {
	return e.outOfRange && target == ErrExcelDateRange
}

// ExcelSerialTime converts an Excel serial date (days since the epoch of
// the workbook's date system, the fraction the time of day) to a time in
// UTC, rounded to the millisecond as Excel shows it. It is the one
// conversion the binder (a number in a date column) and the workbook
// reader (a date-formatted cell) share, so that the same serial is the
// same day whichever way it arrives.
//
// In the 1900 system day 60 is an error: Excel shows it as 1900-02-29, a
// day no calendar has, and guessing the 28th or the 1st would change data
// the input did not mention. Day 0 (Excel's "1900-01-00") is an error too.
// A negative serial, one past 9999-12-31 or one that is not a number is an
// error matching ErrExcelDateRange.
func ExcelSerialTime(serial float64, date1904 bool) (time.Time, error) {
	if math.IsNaN(serial) || math.IsInf(serial, 0) {
		return time.Time{}, &excelDateError{msg: "is not an Excel serial date", outOfRange: true}
	}
	day := math.Floor(serial)
	ms := math.Round((serial - day) * 86400e3)
	var base time.Time
	switch {
	case serial < 0 && date1904:
		return time.Time{}, &excelDateError{msg: "is before the first Excel date, 1904-01-01", outOfRange: true}
	case serial < 0:
		return time.Time{}, &excelDateError{msg: "is before the first Excel date, 1900-01-01", outOfRange: true}
	case date1904:
		base = excelEpoch1904
	case day == 60:
		return time.Time{}, &excelDateError{msg: "is Excel's 1900-02-29, a day that does not exist"}
	case day < 1:
		return time.Time{}, &excelDateError{msg: "is not an Excel serial date (day 0 is before 1900-01-01)"}
	case day < 60:
		base = excelEpoch1900.AddDate(0, 0, 1)
	default:
		base = excelEpoch1900
	}
	past := &excelDateError{msg: "is past the last Excel date, 9999-12-31", outOfRange: true}
	if day > 3e6 { // AddDate would overflow long before a year matters
		return time.Time{}, past
	}
	tm := base.AddDate(0, 0, int(day)).Add(time.Duration(ms) * time.Millisecond)
	if tm.After(excelLast) {
		return time.Time{}, past
	}
	return tm, nil
}
