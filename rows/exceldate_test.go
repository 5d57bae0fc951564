package rows

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestExcelSerialTime(t *testing.T) {
	t.Parallel()
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		serial   float64
		date1904 bool
		want     time.Time
		err      string // substring of the error; "" for none
		outside  bool   // the error matches ErrExcelDateRange
	}{
		{serial: 1, want: day(1900, 1, 1)},
		{serial: 59, want: day(1900, 2, 28)},
		{serial: 59.75, want: day(1900, 2, 28).Add(18 * time.Hour)},
		{serial: 60, err: "1900-02-29, a day that does not exist"},
		{serial: 60.5, err: "1900-02-29, a day that does not exist"},
		{serial: 61, want: day(1900, 3, 1)},
		{serial: 0, err: "day 0 is before 1900-01-01"},
		{serial: 0.5, err: "day 0 is before 1900-01-01"},
		{serial: 45292, want: day(2024, 1, 1)},
		{serial: 45292.5, want: day(2024, 1, 1).Add(12 * time.Hour)},
		{serial: 43833.999999999, want: day(2020, 1, 4)}, // rounds to the next day
		{serial: 43833 + 501.0/86_400_000, want: day(2020, 1, 3).Add(501 * time.Millisecond)},
		{serial: 2958465, want: day(9999, 12, 31)},
		{serial: 2958465.5, want: day(9999, 12, 31).Add(12 * time.Hour)},
		{serial: 2958466, err: "past the last Excel date, 9999-12-31", outside: true},
		{serial: 1e300, err: "past the last Excel date", outside: true},
		{serial: -1, err: "before the first Excel date, 1900-01-01", outside: true},
		{serial: 0, date1904: true, want: day(1904, 1, 1)},
		{serial: 0.25, date1904: true, want: day(1904, 1, 1).Add(6 * time.Hour)},
		{serial: 60, date1904: true, want: day(1904, 3, 1)},
		{serial: 43830, date1904: true, want: day(2024, 1, 1)},
		{serial: 2957003, date1904: true, want: day(9999, 12, 31)},
		{serial: 2957004, date1904: true, err: "past the last Excel date", outside: true},
		{serial: -0.5, date1904: true, err: "before the first Excel date, 1904-01-01", outside: true},
	}
	for _, tt := range tests {
		got, err := ExcelSerialTime(tt.serial, tt.date1904)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, ErrExcelDateRange) != tt.outside {
				t.Errorf("ExcelSerialTime(%v, %v) = %v, %v; want an error with %q (outside the range: %v)", tt.serial, tt.date1904, got, err, tt.err, tt.outside)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("ExcelSerialTime(%v, %v) = %v, %v; want %v", tt.serial, tt.date1904, got, err, tt.want)
		}
	}
}
