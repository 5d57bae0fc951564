package rows

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDecimal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		out   string // String() of the result; "" when an error is wanted
		scale int
		err   error
	}{
		{"0", "0", 0, nil},
		{"12.50", "12.50", 2, nil},
		{"-1234.5", "-1234.5", 1, nil},
		{"+3", "3", 0, nil},
		{".5", "0.5", 1, nil},
		{"5.", "5", 0, nil},
		{"-0.001", "-0.001", 3, nil},
		{"0.10", "0.10", 2, nil},
		{"000123.4500", "123.4500", 4, nil},
		{"999999999999999999", "999999999999999999", 0, nil},
		{"-99999999999999.9999", "-99999999999999.9999", 4, nil},
		{"0.000000000000000001", "0.000000000000000001", 18, nil},
		{"1234567890123456789", "", 0, errDecimalRange},
		{"0.0000000000000000001", "", 0, errDecimalRange},
		{"", "", 0, errDecimalSyntax},
		{"-", "", 0, errDecimalSyntax},
		{".", "", 0, errDecimalSyntax},
		{"1,50", "", 0, errDecimalSyntax},
		{"1e3", "", 0, errDecimalSyntax},
		{"1.2.3", "", 0, errDecimalSyntax},
		{" 1", "", 0, errDecimalSyntax},
		{"NaN", "", 0, errDecimalSyntax},
		{"--1", "", 0, errDecimalSyntax},
		{"$5", "", 0, errDecimalSyntax},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("ParseDecimal(%q) = %v, %v; want %v", tt.in, d, err, tt.err)
			}
			continue
		}
		if err != nil || d.String() != tt.out || d.Scale() != tt.scale {
			t.Errorf("ParseDecimal(%q) = %q (scale %d), %v; want %q (scale %d)", tt.in, d, d.Scale(), err, tt.out, tt.scale)
		}
	}
}

func TestDecimalCmp(t *testing.T) {
	t.Parallel()
	d := func(s string) Decimal {
		v, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		a, b string
		want int
	}{
		{"1.5", "1.50", 0},
		{"0.1", "0.10000000000000001", -1}, // a float64 cannot tell these apart
		{"-1", "0", -1},
		{"10", "9.999", 1},
		{"999999999999999999", "0.000000000000000001", 1}, // aligning overflows int64
		{"-0", "0", 0},
	}
	for _, tt := range tests {
		if got := d(tt.a).Cmp(d(tt.b)); got != tt.want {
			t.Errorf("%s.Cmp(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := d(tt.b).Cmp(d(tt.a)); got != -tt.want {
			t.Errorf("%s.Cmp(%s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
	if NewDecimal(1250, 2).String() != "12.50" || NewDecimal(-5, 3).String() != "-0.005" || NewDecimal(7, 0).String() != "7" {
		t.Error("NewDecimal formats wrong")
	}
	if d("-2").Sign() != -1 || !d("0.00").IsZero() || d("0.00").Sign() != 0 || d("0.1").Float64() != 0.1 {
		t.Error("Sign, IsZero or Float64 wrong")
	}
}

func TestDecimalEncodings(t *testing.T) {
	t.Parallel()
	var v struct {
		A Decimal  `json:"a"`
		B *Decimal `json:"b"`
	}
	if err := json.Unmarshal([]byte(`{"a":"0.10","b":"-3.000"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"a":"0.10","b":"-3.000"}` {
		t.Errorf("JSON round trip = %s", out)
	}
	if val, err := v.A.Value(); err != nil || val != "0.10" {
		t.Errorf("Value() = %v, %v", val, err)
	}
	for _, tt := range []struct {
		src  any
		want string
	}{{"12.30", "12.30"}, {[]byte("7"), "7"}, {int64(-4), "-4"}, {0.25, "0.25"}, {nil, "0"}} {
		var d Decimal
		if err := d.Scan(tt.src); err != nil || d.String() != tt.want {
			t.Errorf("Scan(%v) = %s, %v; want %s", tt.src, d, err, tt.want)
		}
	}
	var d Decimal
	if err := d.Scan("abc"); err == nil {
		t.Error("Scan(abc) accepted")
	}
	if err := d.Scan(true); err == nil {
		t.Error("Scan(true) accepted")
	}
}

type tier string

func (tier) Enum() []string { return []string{"free", "Pro", "enterprise"} }

type richRow struct {
	Amount  Decimal   `col:"amount"`
	Opt     *Decimal  `col:"opt"`
	Active  bool      `col:"active" bool:"ja|oui,nein|non"`
	Date    time.Time `col:"date"`
	Mac     time.Time `col:"mac" excel:"1904"`
	NoXL    time.Time `col:"noxl" excel:"off"`
	Tier    tier      `col:"tier"`
	TierPtr *tier     `col:"tier_ptr"`
}

func TestBindRichTypes(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[richRow]())
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	pro := tier("Pro")
	tests := []struct {
		column, cell string
		check        func(r richRow) bool
		code         Code
	}{
		{"amount", "12.50", func(r richRow) bool { return r.Amount.String() == "12.50" }, ""},
		{"amount", "0.1", func(r richRow) bool { return r.Amount.Cmp(NewDecimal(1, 1)) == 0 }, ""},
		{"amount", "12,50", nil, CodeNotANumber},
		{"amount", "1e5", nil, CodeNotANumber},
		{"amount", "12345678901234567890", nil, CodeOutOfRange},
		{"opt", "", func(r richRow) bool { return r.Opt == nil }, ""},
		{"opt", "-1", func(r richRow) bool { return r.Opt != nil && r.Opt.String() == "-1" }, ""},
		{"active", "JA", func(r richRow) bool { return r.Active }, ""},
		{"active", "oui", func(r richRow) bool { return r.Active }, ""},
		{"active", "Nein", func(r richRow) bool { return !r.Active }, ""},
		{"active", "yes", func(r richRow) bool { return r.Active }, ""}, // the defaults stay
		{"active", "vielleicht", nil, CodeNotABool},
		{"date", "45292", func(r richRow) bool { return r.Date.Equal(day(2024, 1, 1)) }, ""},
		{"date", "45292.5", func(r richRow) bool { return r.Date.Equal(day(2024, 1, 1).Add(12 * time.Hour)) }, ""},
		{"date", "1", func(r richRow) bool { return r.Date.Equal(day(1900, 1, 1)) }, ""},
		{"date", "59", func(r richRow) bool { return r.Date.Equal(day(1900, 2, 28)) }, ""},
		{"date", "60", nil, CodeBadDate}, // Lotus's 1900-02-29
		{"date", "61", func(r richRow) bool { return r.Date.Equal(day(1900, 3, 1)) }, ""},
		{"date", "0", nil, CodeBadDate},
		{"date", "99999", func(r richRow) bool { return r.Date.Equal(day(2173, 10, 13)) }, ""},
		{"date", "250131", nil, CodeBadDate}, // a compact date, never the year 2584
		{"date", "2958465", nil, CodeBadDate},
		{"date", "2958466", nil, CodeBadDate},
		{"date", "-5", nil, CodeBadDate},
		{"date", "2024-01-01", func(r richRow) bool { return r.Date.Equal(day(2024, 1, 1)) }, ""},
		{"mac", "0", func(r richRow) bool { return r.Mac.Equal(day(1904, 1, 1)) }, ""},
		{"mac", "43830", func(r richRow) bool { return r.Mac.Equal(day(2024, 1, 1)) }, ""}, // 45292 - 1462
		{"noxl", "45292", nil, CodeBadDate},
		{"tier", "PRO", func(r richRow) bool { return r.Tier == "Pro" }, ""},
		{"tier", " free ", func(r richRow) bool { return r.Tier == "free" }, ""},
		{"tier", "gold", nil, CodeOneOf},
		{"tier_ptr", "pro", func(r richRow) bool { return r.TierPtr != nil && *r.TierPtr == pro }, ""},
		{"tier_ptr", "", func(r richRow) bool { return r.TierPtr == nil }, ""},
	}
	for _, tt := range tests {
		m := mustMap(t, b, tt.column)
		var r richRow
		errs := m.Bind(5, []string{tt.cell}, &r)
		if tt.code != "" {
			if len(errs) != 1 || errs[0].Code != tt.code || errs[0].Column != tt.column || errs[0].Row != 5 {
				t.Errorf("%s=%q: errors %v, want one %s", tt.column, tt.cell, errs, tt.code)
			}
			continue
		}
		if len(errs) != 0 || !tt.check(r) {
			t.Errorf("%s=%q: bound %+v, errors %v", tt.column, tt.cell, r, errs)
		}
	}

	m := mustMap(t, b, "tier")
	errs := m.Bind(2, []string{"gold"}, new(richRow))
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "free, Pro, enterprise") {
		t.Errorf("enum message %v does not list the values", errs)
	}
}

func TestBinderTagErrors(t *testing.T) {
	t.Parallel()
	for name, typ := range map[string]reflect.Type{
		"excel value": reflect.TypeFor[struct {
			D time.Time `col:"d" excel:"2000"`
		}](),
		"bool without comma": reflect.TypeFor[struct {
			B bool `col:"b" bool:"ja"`
		}](),
		"bool word both ways": reflect.TypeFor[struct {
			B bool `col:"b" bool:"x,x"`
		}](),
		"empty enum": reflect.TypeFor[struct {
			E emptyEnum `col:"e"`
		}](),
	} {
		if _, err := NewBinder(typ); err == nil {
			t.Errorf("%s: NewBinder accepted it", name)
		}
	}
}

type emptyEnum string

func (emptyEnum) Enum() []string { return nil }

func TestBinderFormatRoundTrip(t *testing.T) {
	t.Parallel()
	b := mustBinder(t, reflect.TypeFor[richRow]())
	one := NewDecimal(1, 0)
	in := richRow{
		Amount: NewDecimal(-125050, 2), Opt: &one, Active: true,
		Date: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Tier: "enterprise",
	}
	cells, err := b.Format(&in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-1250.50", "1", "true", "2024-02-29", "", "", "enterprise", ""}; strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Errorf("Format = %q, want %q", cells, want)
	}
	var cols []string
	for _, c := range b.Columns() {
		cols = append(cols, c.Name)
	}
	var out richRow
	if errs := mustMap(t, b, cols...).Bind(2, cells, &out); len(errs) != 0 {
		t.Fatalf("Bind(Format) errors %v", errs)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip %+v, want %+v", out, in)
	}
	if _, err := b.Format(struct{}{}); err == nil {
		t.Error("Format of another type accepted")
	}
}
