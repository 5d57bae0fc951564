package rows

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// level is a TextUnmarshaler: binding must use UnmarshalText, not the
// underlying int.
type level int

func (l *level) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("unknown level")
	}
	return nil
}

type bindRow struct {
	Name     string    `col:"name"`
	Age      int       `col:"age"`
	Small    int8      `col:"small"`
	Count    uint16    `col:"count"`
	Amount   float64   `col:"amount"`
	Ratio    float32   `col:"ratio"`
	Active   bool      `col:"active"`
	Born     time.Time `col:"born"`
	Signed   time.Time `col:"signed" layout:"02/01/2006|2006-01-02"`
	Score    *int      `col:"score"`
	Level    level     `col:"level"`
	LevelPtr *level    `col:"level_ptr"`

	// Internal fields: no col tag, or an explicit "-".
	TenantID string
	State    string `col:"-"`
}

func ptr[T any](v T) *T { return &v }

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// sameRow compares rows with times compared as instants.
func sameRow(a, b bindRow) bool {
	a.Born, b.Born = a.Born.UTC(), b.Born.UTC()
	a.Signed, b.Signed = a.Signed.UTC(), b.Signed.UTC()
	return reflect.DeepEqual(a, b)
}

func mustBinder(t testing.TB, typ reflect.Type) *Binder {
	t.Helper()
	b, err := NewBinder(typ)
	if err != nil {
		t.Fatalf("NewBinder(%s): %v", typ, err)
	}
	return b
}

func mustMap(t testing.TB, b *Binder, header ...string) *Mapping {
	t.Helper()
	m, err := b.Map(header)
	if err != nil {
		t.Fatalf("Map(%q): %v", header, err)
	}
	return m
}

func TestBindTypes(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[bindRow]())
	tests := []struct {
		name   string
		column string
		cell   string
		want   bindRow // the row after binding the one cell
		code   Code    // want one error with this code; "" for none
	}{
		{"string", "name", "Jane", bindRow{Name: "Jane"}, ""},
		{"string trimmed", "name", "  Jane Doe \t", bindRow{Name: "Jane Doe"}, ""},
		{"string empty", "name", "   ", bindRow{}, ""},

		{"int", "age", "42", bindRow{Age: 42}, ""},
		{"int trimmed", "age", " 42 ", bindRow{Age: 42}, ""},
		{"int negative", "age", "-7", bindRow{Age: -7}, ""},
		{"int empty is zero", "age", "", bindRow{}, ""},
		{"int max", "age", "9223372036854775807", bindRow{Age: 1<<63 - 1}, ""},
		{"int overflow", "age", "9223372036854775808", bindRow{}, CodeOutOfRange},
		{"int not a number", "age", "forty", bindRow{}, CodeNotANumber},
		{"int with a decimal", "age", "4.5", bindRow{}, CodeNotANumber},
		{"int with a thousands separator", "age", "1,000", bindRow{}, CodeNotANumber},
		{"int8 max", "small", "127", bindRow{Small: 127}, ""},
		{"int8 overflow", "small", "128", bindRow{}, CodeOutOfRange},
		{"int8 underflow", "small", "-129", bindRow{}, CodeOutOfRange},
		{"uint16", "count", "65535", bindRow{Count: 65535}, ""},
		{"uint16 overflow", "count", "65536", bindRow{}, CodeOutOfRange},
		{"uint negative", "count", "-1", bindRow{}, CodeNotANumber},

		{"float", "amount", "12.50", bindRow{Amount: 12.5}, ""},
		{"float exponent", "amount", "1e3", bindRow{Amount: 1000}, ""},
		{"float negative", "amount", "-0.25", bindRow{Amount: -0.25}, ""},
		{"float not a number", "amount", "12,50", bindRow{}, CodeNotANumber},
		{"float currency", "amount", "$12", bindRow{}, CodeNotANumber},
		{"float overflow", "amount", "1e400", bindRow{}, CodeOutOfRange},
		{"float NaN", "amount", "NaN", bindRow{}, CodeNotANumber},
		{"float Inf", "amount", "Inf", bindRow{}, CodeNotANumber},
		{"float infinity", "amount", "-infinity", bindRow{}, CodeNotANumber},
		{"float32", "ratio", "0.5", bindRow{Ratio: 0.5}, ""},
		{"float32 overflow", "ratio", "1e39", bindRow{}, CodeOutOfRange},

		{"bool true", "active", "true", bindRow{Active: true}, ""},
		{"bool TRUE", "active", "TRUE", bindRow{Active: true}, ""},
		{"bool yes", "active", "yes", bindRow{Active: true}, ""},
		{"bool Y", "active", "Y", bindRow{Active: true}, ""},
		{"bool 1", "active", "1", bindRow{Active: true}, ""},
		{"bool false", "active", "false", bindRow{}, ""},
		{"bool no", "active", "No", bindRow{}, ""},
		{"bool 0", "active", "0", bindRow{}, ""},
		{"bool empty", "active", "", bindRow{}, ""},
		{"bool bad", "active", "maybe", bindRow{}, CodeNotABool},
		{"bool 2", "active", "2", bindRow{}, CodeNotABool},

		{"time default layout", "born", "2024-02-29", bindRow{Born: date(2024, 2, 29)}, ""},
		{"time RFC 3339", "born", "2024-02-29T10:30:00+02:00", bindRow{Born: time.Date(2024, 2, 29, 8, 30, 0, 0, time.UTC)}, ""},
		{"time with seconds", "born", "2024-02-29 10:30:05", bindRow{Born: time.Date(2024, 2, 29, 10, 30, 5, 0, time.UTC)}, ""},
		{"time empty", "born", "", bindRow{}, ""},
		{"time not a day", "born", "2023-02-29", bindRow{}, CodeBadDate},
		{"time day first, the only way it reads", "born", "29/02/2024", bindRow{Born: date(2024, 2, 29)}, ""},
		{"time month first, the only way it reads", "born", "02/29/2024", bindRow{Born: date(2024, 2, 29)}, ""},
		{"time ambiguous is never guessed", "born", "01/02/2024", bindRow{}, CodeBadDate},
		{"time two-digit year", "born", "29/02/24", bindRow{}, CodeBadDate},
		{"time dots", "born", "31.12.2025", bindRow{Born: date(2025, 12, 31)}, ""},
		{"time month name", "born", "31-Dec-2025", bindRow{Born: date(2025, 12, 31)}, ""},
		{"time month name first", "born", "Dec 31, 2025", bindRow{Born: date(2025, 12, 31)}, ""},
		{"time no such day", "born", "31/02/2024", bindRow{}, CodeBadDate},
		{"time wrong form", "born", "2024-13-01", bindRow{}, CodeBadDate},
		{"time words", "born", "yesterday", bindRow{}, CodeBadDate},
		{"time layout tag", "signed", "29/02/2024", bindRow{Signed: date(2024, 2, 29)}, ""},
		{"time layout tag second layout", "signed", "2024-02-29", bindRow{Signed: date(2024, 2, 29)}, ""},
		{"time layout tag first, then the forms no layout covers", "signed", "2024-02-29 10:30:05", bindRow{Signed: time.Date(2024, 2, 29, 10, 30, 5, 0, time.UTC)}, ""},

		{"pointer empty is nil", "score", "", bindRow{}, ""},
		{"pointer blank is nil", "score", "  ", bindRow{}, ""},
		{"pointer set", "score", "7", bindRow{Score: ptr(7)}, ""},
		{"pointer zero is not nil", "score", "0", bindRow{Score: ptr(0)}, ""},
		{"pointer bad", "score", "x", bindRow{}, CodeNotANumber},

		{"TextUnmarshaler", "level", "High", bindRow{Level: 2}, ""},
		{"TextUnmarshaler empty", "level", "", bindRow{}, ""},
		{"TextUnmarshaler bad", "level", "2", bindRow{}, CodeInvalid},
		{"TextUnmarshaler pointer", "level_ptr", "low", bindRow{LevelPtr: ptr(level(1))}, ""},
		{"TextUnmarshaler pointer empty", "level_ptr", "", bindRow{}, ""},
		{"TextUnmarshaler pointer bad", "level_ptr", "medium", bindRow{}, CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The header spells the column differently from the tag, so
			// the error must carry the file's spelling.
			header := " " + strings.ToUpper(tt.column) + " "
			m := mustMap(t, b, header)
			var got bindRow
			errs := m.Bind(9, []string{tt.cell}, &got)
			if !sameRow(got, tt.want) {
				t.Errorf("bound %+v, want %+v", got, tt.want)
			}
			if tt.code == "" {
				if len(errs) != 0 {
					t.Errorf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one %s", errs, tt.code)
			}
			fe := errs[0]
			wantField := m.b.fields[m.cell[0]].name
			if fe.Code != tt.code || fe.Row != 9 || fe.Column != strings.TrimSpace(header) || fe.Field != wantField {
				t.Errorf("error %+v, want code %s, row 9, column %q, field %s", fe, tt.code, strings.TrimSpace(header), wantField)
			}
			if fe.Message == "" || !strings.Contains(fe.Message, strings.TrimSpace(tt.cell)) {
				t.Errorf("message %q does not quote the cell %q", fe.Message, tt.cell)
			}
		})
	}
}

func TestBindBadDateMessage(t *testing.T) {
	t.Parallel()

	m := mustMap(t, mustBinder(t, reflect.TypeFor[bindRow]()), "signed")
	errs := m.Bind(2, []string{"the 1st of May"}, new(bindRow))
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "DD/MM/YYYY or YYYY-MM-DD, DD/MM/YYYY or MM/DD/YYYY") {
		t.Errorf("errors %v, want a message naming DD/MM/YYYY or YYYY-MM-DD", errs)
	}
}

func TestBindRow(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[bindRow]())
	m := mustMap(t, b, "Name", "AGE", "extra", "Active", "score")

	t.Run("every cell, errors collected", func(t *testing.T) {
		t.Parallel()
		var got bindRow
		errs := m.Bind(4, []string{" Jane ", "x", "ignored", "maybe", "3"}, &got)
		want := bindRow{Name: "Jane", Score: ptr(3)}
		if !sameRow(got, want) {
			t.Errorf("bound %+v, want %+v", got, want)
		}
		var cols []string
		for _, fe := range errs {
			cols = append(cols, fe.Column+":"+string(fe.Code))
		}
		if want := []string{"AGE:not_a_number", "Active:not_a_bool"}; !slices.Equal(cols, want) {
			t.Errorf("errors %v, want %v", cols, want)
		}
	})
	t.Run("short row leaves the rest zero", func(t *testing.T) {
		t.Parallel()
		got := bindRow{}
		if errs := m.Bind(4, []string{"Jane"}, &got); len(errs) != 0 {
			t.Fatalf("errors %v", errs)
		}
		if !sameRow(got, bindRow{Name: "Jane"}) {
			t.Errorf("bound %+v", got)
		}
	})
	t.Run("long row ignores the extra cells", func(t *testing.T) {
		t.Parallel()
		got := bindRow{}
		if errs := m.Bind(4, []string{"Jane", "1", "", "yes", "", "not", "bound"}, &got); len(errs) != 0 {
			t.Fatalf("errors %v", errs)
		}
		if !sameRow(got, bindRow{Name: "Jane", Age: 1, Active: true}) {
			t.Errorf("bound %+v", got)
		}
	})
	t.Run("wrong destination panics", func(t *testing.T) {
		t.Parallel()
		defer func() {
			if recover() == nil {
				t.Error("Bind into a value of another type did not panic")
			}
		}()
		m.Bind(4, []string{"Jane"}, &struct{ Name string }{})
	})
}

type contact struct {
	Email   string `col:"email,alias=E-Mail|mail|email address"`
	Name    string `col:" Full Name "`
	Phone   string `col:"phone"`
	Country string `col:",alias=land"` // empty name: the Go name is the column
}

func TestMap(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[contact]())
	tests := []struct {
		name    string
		header  []string
		fields  []string // Go field per header cell, "" for unknown
		unknown []string
		missing []string
	}{
		{
			name:    "exact",
			header:  []string{"email", "Full Name", "phone", "Country"},
			fields:  []string{"Email", "Name", "Phone", "Country"},
			unknown: nil,
			missing: nil,
		},
		{
			name:    "case and space insensitive",
			header:  []string{"  EMAIL", "fullname", "P h o n e", "COUNTRY "},
			fields:  []string{"Email", "Name", "Phone", "Country"},
			unknown: nil,
			missing: nil,
		},
		{
			name:    "aliases",
			header:  []string{"E-Mail", "LAND"},
			fields:  []string{"Email", "Country"},
			missing: []string{"Full Name", "phone"},
		},
		{
			name:    "alias with a space",
			header:  []string{"Email  Address"},
			fields:  []string{"Email"},
			missing: []string{"Full Name", "phone", "Country"},
		},
		{
			name:    "unknown columns listed as spelled, trimmed",
			header:  []string{" notes ", "email", "E_mail", "name"},
			fields:  []string{"", "Email", "", ""},
			unknown: []string{"notes", "E_mail", "name"},
			missing: []string{"Full Name", "phone", "Country"},
		},
		{
			name:    "internal field names are unknown columns",
			header:  []string{"TenantID", "State", "phone"},
			fields:  []string{"", "", "Phone"},
			unknown: []string{"TenantID", "State"},
			missing: []string{"email", "Full Name", "Country"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := mustMap(t, b, tt.header...)
			for i, want := range tt.fields {
				got := ""
				if m.cell[i] >= 0 {
					got = b.fields[m.cell[i]].name
				}
				if got != want {
					t.Errorf("header %q maps to field %q, want %q", tt.header[i], got, want)
				}
			}
			if !slices.Equal(m.Unknown, tt.unknown) {
				t.Errorf("Unknown = %q, want %q", m.Unknown, tt.unknown)
			}
			if !slices.Equal(m.Missing, tt.missing) {
				t.Errorf("Missing = %q, want %q", m.Missing, tt.missing)
			}
		})
	}
}

func TestMapBadHeader(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[contact]())
	tests := []struct {
		name     string
		header   []string
		contains string
	}{
		{"rename of a column the file lacks", []string{"email", "phone"}, `the file has no column "Phone No"`},
		{"duplicate", []string{"Email", "phone", " email "}, "columns 1 and 3"},
		{"duplicate unknown column", []string{"notes", "NOTES"}, "columns 1 and 2"},
		{"duplicate by spacing", []string{"Full Name", "fullname"}, "columns 1 and 2"},
		{"two aliases of one field", []string{"email", "mail"}, "map to email"},
		{"alias and name of one field", []string{"E-Mail", "phone", "EMAIL"}, "map to email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conv := Conventions{}
			if strings.HasPrefix(tt.name, "rename") {
				conv.Renames = []Rename{{From: "Phone No", To: "phone"}}
			}
			m, err := b.MapFile(tt.header, conv)
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("Map(%q) = %v, %v; want ErrBadHeader", tt.header, m, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestMappingColumnName(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[contact]())
	m := mustMap(t, b, " E-Mail ", "FULLNAME")
	for field, want := range map[string]string{
		"Email":   "E-Mail",   // as the file spells it, trimmed
		"Name":    "FULLNAME", // ditto
		"Phone":   "phone",    // absent: the declared name
		"Country": "Country",  // absent, declared by Go name
		"Bogus":   "",         // not a column
	} {
		if got := m.ColumnName(field); got != want {
			t.Errorf("ColumnName(%q) = %q, want %q", field, got, want)
		}
	}
	if got, want := b.Columns(), []Column{{"email", "Email"}, {"Full Name", "Name"}, {"phone", "Phone"}, {"Country", "Country"}}; !slices.Equal(got, want) {
		t.Errorf("Columns() = %v, want %v", got, want)
	}
}

// account has internal fields a header must never reach.
type account struct {
	Email    string `col:"email"`
	TenantID string
	State    string `col:"-"`
	RowNo    int64  `json:"row_no"`
	secret   string `col:"secret"` //nolint:unused // the point is that it is never bound
}

func TestBindInternalFieldsUnreachable(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[account]())
	header := []string{"email", "TenantID", "tenant_id", "State", "-", "RowNo", "row_no", "secret"}
	m := mustMap(t, b, header...)
	if want := header[1:]; !slices.Equal(m.Unknown, want) {
		t.Errorf("Unknown = %q, want %q", m.Unknown, want)
	}
	got := account{TenantID: "t1", State: "valid", RowNo: 5, secret: "s"}
	errs := m.Bind(2, []string{"a@x", "evil", "evil", "succeeded", "x", "99", "99", "leak"}, &got)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	want := account{Email: "a@x", TenantID: "t1", State: "valid", RowNo: 5, secret: "s"}
	if got != want {
		t.Errorf("bound %+v, want %+v: a header reached an internal field", got, want)
	}
	if cols := b.Columns(); len(cols) != 1 || cols[0].Field != "Email" {
		t.Errorf("Columns() = %v, want only email", cols)
	}
}

type Base struct {
	ID string `col:"id"`
}

type embedded struct {
	Base
	Name string `col:"name"`
}

type embedPtr struct {
	*Base
	Name string `col:"name"`
}

func TestBindEmbedded(t *testing.T) {
	t.Parallel()

	t.Run("by value", func(t *testing.T) {
		t.Parallel()
		m := mustMap(t, mustBinder(t, reflect.TypeFor[embedded]()), "ID", "name")
		var got embedded
		if errs := m.Bind(2, []string{"7", "Jane"}, &got); len(errs) != 0 {
			t.Fatalf("errors %v", errs)
		}
		if got.ID != "7" || got.Name != "Jane" {
			t.Errorf("bound %+v", got)
		}
	})
	t.Run("by pointer is rejected", func(t *testing.T) {
		t.Parallel()
		// Binding would have to go through a nil pointer; refuse the type
		// up front rather than panic on the first row.
		if _, err := NewBinder(reflect.TypeFor[embedPtr]()); err == nil || !strings.Contains(err.Error(), "ID") {
			t.Fatalf("NewBinder(embedPtr) = %v, want an error naming ID", err)
		}
	})
}

func TestNewBinderErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		typ      reflect.Type
		contains string
	}{
		{"int", reflect.TypeFor[int](), "not a struct"},
		{"pointer to string", reflect.TypeFor[*string](), "not a struct"},
		{"slice of structs", reflect.TypeFor[[]contact](), "not a struct"},
		{"no col tags", reflect.TypeFor[struct{ A, B string }](), "no field with a col tag"},
		{"only internal", reflect.TypeFor[struct {
			A string `col:"-"`
			b string `col:"b"`
		}](), "no field with a col tag"},
		{"slice field", reflect.TypeFor[struct {
			Tags []string `col:"tags"`
		}](), "unsupported field type []string"},
		{"map field", reflect.TypeFor[struct {
			M map[string]string `col:"m"`
		}](), "unsupported field type"},
		{"struct field", reflect.TypeFor[struct {
			C contact `col:"c"`
		}](), "unsupported field type"},
		{"complex field", reflect.TypeFor[struct {
			C complex128 `col:"c"`
		}](), "unsupported field type"},
		{"pointer to unsupported", reflect.TypeFor[struct {
			P *[]int `col:"p"`
		}](), "unsupported field type"},
		{"same column twice", reflect.TypeFor[struct {
			A string `col:"email"`
			B string `col:"Email"`
		}](), "collides"},
		{"same column by spacing", reflect.TypeFor[struct {
			A string `col:"e mail"`
			B string `col:"email"`
		}](), "collides"},
		{"alias collides with a column", reflect.TypeFor[struct {
			A string `col:"email,alias=mail"`
			B string `col:"mail"`
		}](), "collides"},
		{"aliases collide", reflect.TypeFor[struct {
			A string `col:"email,alias=contact"`
			B string `col:"phone,alias=x|Contact"`
		}](), "collides"},
		{"column collides with a Go name", reflect.TypeFor[struct {
			A string `col:""`
			B string `col:"a"`
		}](), "collides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := NewBinder(tt.typ)
			if err == nil {
				t.Fatalf("NewBinder = %+v, want an error", b)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

// TestNewBinderOwnSpellings: a field may list its own column among its
// aliases, in any case or spacing; that is no collision (a schema's
// "Ref" with alias "ref" failed to compile).
func TestNewBinderOwnSpellings(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[struct {
		Ref string `col:"Ref,alias=ref|R E F|Reference"`
	}]())
	for _, header := range []string{"Ref", "ref", "Reference"} {
		m := mustMap(t, b, header)
		var got struct {
			Ref string `col:"Ref,alias=ref|R E F|Reference"`
		}
		if errs := m.Bind(2, []string{"x1"}, &got); len(errs) != 0 || got.Ref != "x1" {
			t.Errorf("header %q: Bind = %v, %+v", header, errs, got)
		}
	}
}

func TestNewBinderPointer(t *testing.T) {
	t.Parallel()

	b := mustBinder(t, reflect.TypeFor[*contact]())
	m := mustMap(t, b, "email")
	var got contact
	if errs := m.Bind(2, []string{"a@x"}, &got); len(errs) != 0 || got.Email != "a@x" {
		t.Errorf("Bind = %v, %+v", errs, got)
	}
}

func TestNormalizeHeader(t *testing.T) {
	t.Parallel()

	tests := []struct{ in, want string }{
		{"email", "email"},
		{" E-Mail ", "e-mail"},
		{"Full  Name", "fullname"},
		{"\tSIGNUP\u00a0date\n", "signupdate"},
		{"", ""},
		{"   ", ""},
		{"Ünïcode Café", "ünïcodecafé"},
	}
	for _, tt := range tests {
		if got := NormalizeHeader(tt.in); got != tt.want {
			t.Errorf("NormalizeHeader(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// fuzzRow has one field of each kind the binder converts.
type fuzzRow struct {
	S  string    `col:"s,alias=str"`
	I  int       `col:"i"`
	I8 int8      `col:"i8"`
	U  uint      `col:"u"`
	F  float64   `col:"f"`
	B  bool      `col:"b"`
	T  time.Time `col:"t" layout:"2006-01-02|02/01/2006"`
	P  *int      `col:"p"`
	L  level     `col:"l"`
	LP *level    `col:"lp"`
	D  Decimal   `col:"d"`
	DP *Decimal  `col:"dp"`
	E  tier      `col:"e"`
	BL bool      `col:"bl" bool:"ja|oui,nein|non"`
	X  time.Time `col:"x" excel:"1904"`
	// The options a Table Schema compiles to.
	ND Decimal   `col:"nd" number:"{\"format\":{\"decimal\":44,\"groups\":[160]},\"strip\":true,\"exponent\":true}"`
	NI int64     `col:"ni" number:"{\"strip\":true}"`
	SP time.Time `col:"sp" strptime:"%d/%m/%y %I:%M %p%z" layout:"2006-01-02"`
	EB bool      `col:"eb" boolvalues:"[[\"Ja\"],[\"false\"]]"`
	BT bool      `col:"bt" bool:"ja,"`

	Internal string
}

func FuzzBind(f *testing.F) {
	for _, seed := range [][2]string{
		{"s,i,f,b,t", "hello,42,1.5,yes,2024-01-02"},
		{"S , I8 ,u", " x ,300,-1"},
		{"str,s", "a,b"},
		{"i,,f", "1,2,3"},
		{"Internal,p,lp,l", "evil,,low,HIGH"},
		{"t,b,f", "31/12/2024,maybe,NaN"},
		{"s", ""},
		{"", ""},
		{"i,i8,u,f", "9223372036854775808,-129,18446744073709551616,1e999"},
		{"s,i,s", "a,1,b"},
		{"d,dp,e,bl,x", "12.50,-0.001,PRO,Ja,43830.5"},
		{"d,dp,e,bl,x", "1e3,12345678901234567890,gold,vielleicht,60"},
		{"t,x", "60,0"},
		{"t", "2958466"},
		{"d", "-.5"},
		{"nd,ni,sp,eb,bt", "€ 1\u00a0234,5E-2,-3 pcs,30/11/14 12:05 AM+0100,Ja,ja"},
		{"nd,ni,sp,eb,bt", "(1),1k,31/02/69 13:00 PM,True,nein"},
	} {
		f.Add(seed[0], seed[1])
	}
	b := mustBinder(f, reflect.TypeFor[fuzzRow]())
	known := map[Code]bool{CodeNotANumber: true, CodeOutOfRange: true, CodeNotABool: true, CodeBadDate: true, CodeInvalid: true, CodeOneOf: true}

	f.Fuzz(func(t *testing.T, headerLine, recordLine string) {
		header := strings.Split(headerLine, ",")
		values := strings.Split(recordLine, ",")
		m, err := b.Map(header)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) {
				t.Fatalf("Map error %v does not wrap ErrBadHeader", err)
			}
			return
		}
		mapped := 0
		for _, fi := range m.cell {
			if fi >= 0 {
				mapped++
			}
		}
		if mapped+len(m.Unknown)+len(m.Unnamed) != len(header) {
			t.Fatalf("%d mapped + %d unknown + %d unnamed != %d header cells", mapped, len(m.Unknown), len(m.Unnamed), len(header))
		}
		if mapped+len(m.Missing) != len(b.fields) {
			t.Fatalf("%d mapped + %d missing != %d fields", mapped, len(m.Missing), len(b.fields))
		}

		var row fuzzRow
		errs := m.Bind(3, values, &row)
		if len(errs) > min(len(values), len(header)) {
			t.Fatalf("%d errors for %d cells", len(errs), min(len(values), len(header)))
		}
		seen := map[string]bool{}
		for _, fe := range errs {
			if seen[fe.Field] {
				t.Fatalf("two errors for field %s: %v", fe.Field, errs)
			}
			seen[fe.Field] = true
			if fe.Row != 3 || fe.Field == "" || fe.Column == "" || !known[fe.Code] || fe.Message == "" {
				t.Fatalf("malformed error %+v", fe)
			}
		}
		if row.Internal != "" {
			t.Fatalf("internal field bound to %q", row.Internal)
		}
	})
}

func TestNormalizeHeaderNFC(t *testing.T) {
	t.Parallel()
	composed, decomposed := "Café", "Cafe\u0301"
	if NormalizeHeader(composed) != NormalizeHeader(decomposed) {
		t.Errorf("NormalizeHeader(%q) != NormalizeHeader(%q)", composed, decomposed)
	}
	b := mustBinder(t, reflectTypeOfCafe())
	m := mustMap(t, b, " CAFE\u0301 ")
	if len(m.Unknown) != 0 || len(m.Missing) != 0 {
		t.Errorf("decomposed header did not match: unknown %q missing %q", m.Unknown, m.Missing)
	}
}

type cafeRow struct {
	Cafe string `col:"Café"`
}

func reflectTypeOfCafe() reflect.Type { return reflect.TypeFor[cafeRow]() }

// TestBoolTagOneSide: a bool tag may name words for true only (or false
// only): the usual words still read, and nothing panics.
func TestBoolTagOneSide(t *testing.T) {
	t.Parallel()
	type row struct {
		A bool `col:"a" bool:"ja,"`
		B bool `col:"b" bool:",nein"`
	}
	m, err := mustBinder(t, reflect.TypeFor[row]()).Map([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	var r row
	if errs := m.Bind(2, []string{"ja", "nein"}, &r); len(errs) > 0 || !r.A || r.B {
		t.Errorf("bound %+v, errors %v", r, errs)
	}
	if errs := m.Bind(2, []string{"vielleicht", "no"}, &r); len(errs) != 1 || !strings.Contains(errs[0].Message, "ja") {
		t.Errorf("errors %v, want one naming the word ja", errs)
	}
}

// TestColumnKindOwn: a column that declares its own number format or date
// pattern is KindOwn, so that its values are no evidence of the file's
// conventions (a decimal comma it declares is not the file's).
func TestColumnKindOwn(t *testing.T) {
	t.Parallel()
	type row struct {
		A Decimal   `col:"a" number:"{\"format\":{\"decimal\":44}}"`
		B Decimal   `col:"b" number:"{\"strip\":true}"`
		C time.Time `col:"c" strptime:"%d/%m/%Y"`
		D time.Time `col:"d"`
	}
	m, err := mustBinder(t, reflect.TypeFor[row]()).Map([]string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{KindOwn, KindNumber, KindOwn, KindDate} {
		if got := m.ColumnKind(i); got != want {
			t.Errorf("column %d is %s, want %s", i, got, want)
		}
	}
}
