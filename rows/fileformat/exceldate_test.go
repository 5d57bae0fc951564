package fileformat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/rows"
)

// A kind's date column in either date system, as the binder reads a plain
// number (a CSV cell) and as the XLSX reader hands over a date cell.
type (
	date1900Row struct {
		Label string    `col:"label"`
		D     time.Time `col:"d"`
	}
	date1904Row struct {
		Label string    `col:"label"`
		D     time.Time `col:"d" excel:"1904"`
	}
)

// TestExcelSerialDatesBothPaths pins the one Excel serial-date conversion
// (rows.ExcelSerialTime) through both ways a serial reaches a kind: a
// number in a CSV cell bound by the binder, and a typed, date-formatted
// XLSX cell read by the XLSX reader and then bound. Each serial must give
// the same time on both paths, or on both a bad_date error naming why,
// with one deliberate exception: a plain number in a text cell is read as
// a serial only in the range Excel's own dates plausibly use (up to 99999,
// 2173-10-13), because a six-digit number in a date column (250131) is a
// compact date or a mistake; a cell the workbook itself types as a date
// is a date up to 9999-12-31.
func TestExcelSerialDatesBothPaths(t *testing.T) {
	t.Parallel()
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	type serial struct {
		v    float64
		want time.Time
		bad  string // the bad_date message names this; "" when want is set
		// plain, when set, is the bad_date message of the CSV path: the
		// number is past the plausible range of a serial in a text cell.
		plain string
	}
	tests := map[bool][]serial{
		false: { // the 1900 system
			{v: 1, want: day(1900, 1, 1)},
			{v: 59, want: day(1900, 2, 28)},
			{v: 60, bad: "1900-02-29, a day that does not exist"},
			{v: 61, want: day(1900, 3, 1)},
			{v: 43833, want: day(2020, 1, 3)},
			{v: 43833.5, want: day(2020, 1, 3).Add(12 * time.Hour)},
			{v: 43833.00001, want: day(2020, 1, 3).Add(864 * time.Millisecond)}, // rounded to the millisecond
			{v: 99999, want: day(2173, 10, 13)},
			{v: 2958465, want: day(9999, 12, 31), plain: "it would be in the year 9999"},
			{v: 2958466, bad: "past the year 2173"}, // the reader keeps a number Excel shows as ####
		},
		true: { // the 1904 system
			{v: 0, want: day(1904, 1, 1)},
			{v: 0.25, want: day(1904, 1, 1).Add(6 * time.Hour)},
			{v: 60, want: day(1904, 3, 1)},
			{v: 43830, want: day(2024, 1, 1)},
			{v: 2957003, want: day(9999, 12, 31), plain: "it would be in the year 9999"},
			{v: 2957004, bad: "past the year 2173"},
		},
	}
	for date1904, serials := range tests {
		typ := reflect.TypeFor[date1900Row]()
		if date1904 {
			typ = reflect.TypeFor[date1904Row]()
		}
		b, err := rows.NewBinder(typ)
		if err != nil {
			t.Fatal(err)
		}
		var csv strings.Builder
		csv.WriteString("label,d\n")
		for i, s := range serials {
			fmt.Fprintf(&csv, "s%d,%s\n", i, strconv.FormatFloat(s.v, 'f', -1, 64))
		}
		files := map[string][]byte{
			"serials.csv":  []byte(csv.String()),
			"serials.xlsx": serialWorkbook(t, date1904, serials, func(s serial) float64 { return s.v }),
		}
		for name, file := range files {
			t.Run(fmt.Sprintf("%s 1904=%v", name, date1904), func(t *testing.T) {
				r, err := Open(bufio.NewReader(bytes.NewReader(file)), name, "", rows.ReadOptions{TmpDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				m, err := b.Map(r.Header())
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range serials {
					rec, err := r.Next()
					if err != nil {
						t.Fatalf("serial %v: %v", s.v, err)
					}
					dst := reflect.New(typ)
					errs := append(rec.Errors, m.Bind(rec.Row, rec.Values, dst.Interface())...)
					got := dst.Elem().FieldByName("D").Interface().(time.Time)
					if label := rec.Values[0]; label != fmt.Sprintf("s%d", i) {
						t.Fatalf("row %d is %q", rec.Row, label)
					}
					bad := s.bad
					if s.plain != "" && strings.HasSuffix(name, ".csv") {
						bad = s.plain
					}
					if bad != "" {
						if len(errs) != 1 || errs[0].Code != rows.CodeBadDate || errs[0].Column != "d" || !strings.Contains(errs[0].Message, bad) {
							t.Errorf("serial %v: errors %v, want one bad_date naming %q", s.v, errs, bad)
						}
						continue
					}
					if len(errs) != 0 || !got.Equal(s.want) {
						t.Errorf("serial %v: %v, errors %v; want %v", s.v, got, errs, s.want)
					}
				}
				if _, err := r.Next(); !errors.Is(err, io.EOF) {
					t.Errorf("after the serials: %v", err)
				}
			})
		}
	}
}

// serialWorkbook writes a workbook in the given date system with a header
// (label, d) and one row per serial, its d cell a number formatted as a
// date (Excel's built-in format 14) or, when it has a fraction, a date and
// time (22), as Excel stores dates typed into it.
func serialWorkbook[S any](t *testing.T, date1904 bool, serials []S, v func(S) float64) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &date1904}); err != nil {
		t.Fatal(err)
	}
	dateStyle, err := f.NewStyle(&excelize.Style{NumFmt: 14})
	if err != nil {
		t.Fatal(err)
	}
	stampStyle, err := f.NewStyle(&excelize.Style{NumFmt: 22})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetSheetRow("Sheet1", "A1", &[]any{"label", "d"}); err != nil {
		t.Fatal(err)
	}
	for i, s := range serials {
		row := i + 2
		x := v(s)
		if err := f.SetCellValue("Sheet1", fmt.Sprintf("A%d", row), fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
		cell := fmt.Sprintf("B%d", row)
		if err := f.SetCellFloat("Sheet1", cell, x, -1, 64); err != nil {
			t.Fatal(err)
		}
		style := dateStyle
		if x != math.Floor(x) {
			style = stampStyle
		}
		if err := f.SetCellStyle("Sheet1", cell, cell, style); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
