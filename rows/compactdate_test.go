package rows

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type compactRow struct {
	Date    time.Time `col:"date"`
	Mac     time.Time `col:"mac" excel:"1904"`
	NoXL    time.Time `col:"noxl" excel:"off"`
	Pattern time.Time `col:"pattern" strptime:"%d/%m/%Y"`
}

// TestCompactDates: digits in a date column are a compact date whose form
// the file declares, never an Excel serial read by default (issue 27,
// item 2: 070125 was stored as 2091-12-28, 010225 as 1927-12-29).
func TestCompactDates(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[compactRow]())
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		format       DateFormat
		column, cell string
		want         time.Time
		hints        []string // the date_format values of a bad_date; nil: no hint
		msg          string   // in the bad_date's message
	}{
		// Undeclared: refused, naming the forms that read it.
		{"", "date", "070125", time.Time{}, []string{"ddmmyy", "yymmdd", "mmddyy"}, "2025-01-07 as ddmmyy"},
		{"", "date", "010225", time.Time{}, []string{"ddmmyy", "yymmdd", "mmddyy"}, "2001-02-25 as yymmdd"},
		{"", "date", "031224", time.Time{}, []string{"ddmmyy", "yymmdd", "mmddyy"}, "2024-12-03 as ddmmyy"},
		{"", "date", "250131", time.Time{}, []string{"ddmmyy", "yymmdd"}, "2025-01-31 as yymmdd"},
		{"", "date", "20250131", time.Time{}, []string{"yyyymmdd"}, "2025-01-31 as yyyymmdd"},
		{"", "date", "999999", time.Time{}, nil, "no compact date"},
		{"", "mac", "070125", time.Time{}, []string{"ddmmyy", "yymmdd", "mmddyy"}, ""},
		{"", "noxl", "070125", time.Time{}, []string{"ddmmyy", "yymmdd", "mmddyy"}, ""},
		// Other plain numbers keep their reading: a serial Excel's own
		// dates use (five digits and fewer: no compact form has them).
		{"", "date", "45678", day(2025, 1, 21), nil, ""},
		{"", "date", "2025-01-07", day(2025, 1, 7), nil, ""},
		// Declared compact forms, the two-digit year by the POSIX rule.
		{"ddmmyy", "date", "070125", day(2025, 1, 7), nil, ""},
		{"yymmdd", "date", "070125", day(2007, 1, 25), nil, ""},
		{"mmddyy", "date", "070125", day(2025, 7, 1), nil, ""},
		{"yymmdd", "date", "691231", day(1969, 12, 31), nil, ""},
		{"yymmdd", "date", "680101", day(2068, 1, 1), nil, ""},
		{"ddmmyyyy", "date", "07012025", day(2025, 1, 7), nil, ""},
		{"yyyymmdd", "date", "20250131", day(2025, 1, 31), nil, ""},
		{"mmddyyyy", "mac", "01312025", day(2025, 1, 31), nil, ""},
		{"ddmmyy", "date", "310225", time.Time{}, nil, "no day 31"},
		{"ddmmyy", "date", "70125", time.Time{}, nil, "not a date in the form ddmmyy (6 digits)"}, // a lost zero is not guessed back
		{"ddmmyy", "date", "45678", time.Time{}, nil, "ddmmyy"},                                   // digits are compact dates now
		{"ddmmyy", "date", "2025-01-07", day(2025, 1, 7), nil, ""},
		{"ddmmyy", "date", "13/01/2025", day(2025, 1, 13), nil, ""},
		// Serials, declared: every plain number, six digits too.
		{"serial", "date", "070125", day(2091, 12, 28), nil, ""},
		{"serial", "date", "45678", day(2025, 1, 21), nil, ""},
		{"serial", "mac", "43830", day(2024, 1, 1), nil, ""},
		{"serial", "noxl", "45678", day(2025, 1, 21), nil, ""},
		{"serial", "date", "60", time.Time{}, nil, "1900-02-29"},
		// A pattern: it and the column's layouts, nothing else.
		{"%d.%m.%Y", "date", "07.01.2025", day(2025, 1, 7), nil, ""},
		{"%d.%m.%Y", "date", "2025-01-07", day(2025, 1, 7), nil, ""},
		{"%d.%m.%Y", "date", "45678", time.Time{}, nil, "declared date format"},
		{"%d%m%y", "date", "070125", day(2025, 1, 7), nil, ""},
		// A column's own pattern wins for its column.
		{"yymmdd", "pattern", "07/01/2025", day(2025, 1, 7), nil, ""},
		{"serial", "pattern", "45678", time.Time{}, nil, "form %d/%m/%Y"},
	} {
		m, err := b.MapFile([]string{tc.column}, Conventions{DateFormat: tc.format})
		if err != nil {
			t.Fatal(err)
		}
		var r compactRow
		errs := m.Bind(2, []string{tc.cell}, &r)
		got := reflect.ValueOf(r).FieldByName(map[string]string{"date": "Date", "mac": "Mac", "noxl": "NoXL", "pattern": "Pattern"}[tc.column]).Interface().(time.Time)
		name := string(tc.format) + " " + tc.column + "=" + tc.cell
		if !tc.want.IsZero() {
			if len(errs) != 0 || !got.Equal(tc.want) {
				t.Errorf("%s: %v, %v; want %v", name, got, errs, tc.want)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Code != CodeBadDate {
			t.Errorf("%s: %v, %v; want a bad_date", name, got, errs)
			continue
		}
		if !strings.Contains(errs[0].Message, tc.msg) {
			t.Errorf("%s: message %q, want it to say %q", name, errs[0].Message, tc.msg)
		}
		var values []string
		for _, h := range errs[0].Hints {
			if h.Option == OptionDateFormat {
				values = h.Values
			}
		}
		if !slices.Equal(values, tc.hints) {
			t.Errorf("%s: hints %v, want date_format %v", name, errs[0].Hints, tc.hints)
		}
	}
}

func TestParseDateFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]DateFormat{"": "", "DDMMYY": "ddmmyy", " yyyymmdd ": "yyyymmdd", "Serial": "serial", "%d.%m.%Y": "%d.%m.%Y"} {
		if got, err := ParseDateFormat(in); err != nil || got != want {
			t.Errorf("ParseDateFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"dmy", "ddmmyyy", "yyyy-mm-dd", "%d.%m", "%Q%m%d%y"} {
		if _, err := ParseDateFormat(in); err == nil {
			t.Errorf("ParseDateFormat(%q): no error", in)
		}
	}
}

// TestConventionsDateFormatJSON: the declared format is kept with the
// batch, and a batch stored before it existed reads as undeclared.
func TestConventionsDateFormatJSON(t *testing.T) {
	t.Parallel()
	in := Conventions{DateOrder: DMY, DateFormat: "yymmdd"}
	b, err := json.Marshal(in)
	if err != nil || !strings.Contains(string(b), `"date_format":"yymmdd"`) {
		t.Fatalf("Marshal: %s, %v", b, err)
	}
	var out Conventions
	if err := json.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
	}
	var old Conventions
	if err := json.Unmarshal([]byte(`{"number":{"decimal":44},"date_order":"mdy","date_order_row":3}`), &old); err != nil || old.DateFormat != DateFormatUndeclared || old.DateOrder != MDY {
		t.Fatalf("old batch: %+v, %v", old, err)
	}
	if b, _ := json.Marshal(Conventions{}); strings.Contains(string(b), "date_format") {
		t.Errorf("undeclared is written: %s", b)
	}
}

// TestSerialUnderDecimalComma: under a locale with a decimal comma a
// workbook writes a typed number 45678,5, which in a date column is the
// serial it was before (issue 27, item 7: typed cells keep their type).
func TestSerialUnderDecimalComma(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[compactRow]())
	de, _ := LocaleNumberFormat("de")
	want := time.Date(2025, 1, 21, 12, 0, 0, 0, time.UTC)
	for _, f := range []DateFormat{"", "serial"} {
		m, err := b.MapFile([]string{"date"}, Conventions{Number: de, DateFormat: f})
		if err != nil {
			t.Fatal(err)
		}
		var r compactRow
		if errs := m.Bind(2, []string{"45678,5"}, &r); len(errs) != 0 || !r.Date.Equal(want) {
			t.Errorf("%q 45678,5 under de: %v, %v; want %v", f, r.Date, errs, want)
		}
		if errs := m.Bind(2, []string{"45678,5,5"}, &r); len(errs) != 1 || errs[0].Code != CodeBadDate {
			t.Errorf("%q 45678,5,5 under de: %v", f, errs)
		}
	}
}
