package validate_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
	"github.com/rowfate/rowfate/validate"
)

// customer exercises every phase: binding (Age, Born), declarative tags,
// Validate<Field> methods (Name, Code, Age) and a cross-field hook.
type customer struct {
	Email   string    `col:"email,alias=E-Mail|mail" validate:"required,email"`
	Name    string    `col:"name" validate:"required,max=10"`
	Age     int       `col:"age" validate:"gte=18"`
	Born    time.Time `col:"born" validate:"required"`
	Country string    `col:"country" validate:"omitempty,len=2"`
	Code    string    `col:"code"`
	Note    string    `col:"note"`

	TenantID string // internal: no col tag
}

func (c *customer) ValidateName(context.Context) error {
	switch {
	case c.Name == "panic":
		panic("boom in ValidateName")
	case strings.ContainsAny(c.Name, "<>"):
		return &rows.FieldError{Code: "forbidden_characters", Message: "must not contain < or >"}
	}
	return nil
}

func (c *customer) ValidateCode(context.Context) error {
	if c.Code != "" && !strings.HasPrefix(c.Code, "C") {
		return errors.New("must start with C")
	}
	return nil
}

// ValidateAge reports every age under 18 with its own code; it must never
// be reached for an age that already failed binding or the gte tag.
func (c *customer) ValidateAge(context.Context) error {
	if c.Age < 18 {
		return &rows.FieldError{Code: "age_checked_again", Message: "should not be reached"}
	}
	return nil
}

func (c *customer) ValidateRow(context.Context) error {
	if c.Note == "panic" {
		panic("boom in ValidateRow")
	}
	var errs rows.FieldErrors
	if c.Country == "ZZ" {
		errs = append(errs, rows.FieldError{Field: "Country", Code: "unknown_country", Message: "is not a country"})
	}
	if c.Note == "row" {
		errs = append(errs, rows.FieldError{Code: "row_level", Message: "the row does not add up"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// header spells the columns the way a user's file might.
var header = []string{"E-Mail", "Name", "AGE", " born ", "country", "code", "note"}

// valid is a record that passes every phase; tests change one cell.
var valid = []string{"jane@example.com", "Jane", "30", "1990-05-01", "NL", "C1", ""}

func with(cells map[int]string) []string {
	out := slices.Clone(valid)
	for i, v := range cells {
		out[i] = v
	}
	return out
}

// want is a field error reduced to what users match on.
type want struct {
	Column, Field string
	Code          rows.Code
}

func reduce(errs []rows.FieldError) []want {
	out := make([]want, len(errs))
	for i, fe := range errs {
		out[i] = want{fe.Column, fe.Field, fe.Code}
	}
	return out
}

type bundle struct {
	p *validate.Pipeline[customer]
	m *rows.Mapping
}

func setup(t *testing.T) bundle {
	t.Helper()
	p, err := validate.New[customer]()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m, err := p.Binder().Map(header)
	if err != nil {
		t.Fatalf("Map: %v", err)
	}
	return bundle{p: p, m: m}
}

func TestRun(t *testing.T) {
	t.Parallel()

	b := setup(t)
	tests := []struct {
		name   string
		values []string
		reader []rows.FieldError // errors the reader attached to the record
		want   []want
	}{
		{
			name:   "valid",
			values: valid,
		},
		{
			name: "every phase fails at once, in phase order",
			values: with(map[int]string{
				0: "",    // declarative: required
				2: "abc", // bind: not a number (and gte/ValidateAge must stay quiet)
				4: "ZZ",  // cross field
				5: "X1",  // per field
				6: "row", // cross field, row level
			}),
			reader: []rows.FieldError{{Row: 5, Code: rows.CodeRaggedRow, Message: "row has 8 cells"}},
			want: []want{
				{"", "", rows.CodeRaggedRow},
				{"AGE", "Age", rows.CodeNotANumber},
				{"E-Mail", "Email", rows.CodeRequired},
				{"code", "Code", rows.CodeInvalid},
				{"country", "Country", "unknown_country"},
				{"", "", "row_level"},
			},
		},
		{
			name:   "bind failure is not reported again as required",
			values: with(map[int]string{3: "yesterday"}),
			want:   []want{{"born", "Born", rows.CodeBadDate}},
		},
		{
			name:   "declarative failure skips the per-field method",
			values: with(map[int]string{2: "5"}),
			want:   []want{{"AGE", "Age", "gte"}},
		},
		{
			name:   "declarative failure skips the per-field method of that field only",
			values: with(map[int]string{1: "<much too long>", 5: "X"}),
			want:   []want{{"Name", "Name", "max"}, {"code", "Code", rows.CodeInvalid}},
		},
		{
			name:   "per-field error names the field and the file's column",
			values: with(map[int]string{1: "<b>"}),
			want:   []want{{"Name", "Name", "forbidden_characters"}},
		},
		{
			name:   "several declarative errors",
			values: with(map[int]string{0: "not-an-email", 1: "", 4: "NLD"}),
			want:   []want{{"E-Mail", "Email", "email"}, {"Name", "Name", rows.CodeRequired}, {"country", "Country", "len"}},
		},
		{
			name:   "panic in a per-field method costs the row, other phases still run",
			values: with(map[int]string{1: "panic", 4: "ZZ"}),
			want:   []want{{"Name", "Name", rows.CodePanic}, {"country", "Country", "unknown_country"}},
		},
		{
			name:   "panic in the cross-field hook costs the row",
			values: with(map[int]string{5: "X", 6: "panic"}),
			want:   []want{{"code", "Code", rows.CodeInvalid}, {"", "", rows.CodePanic}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := rows.Record{Row: 5, Line: 6, Values: tt.values, Errors: tt.reader}
			_, errs := b.p.Run(context.Background(), b.m, rec)
			if got := reduce(errs); !slices.Equal(got, tt.want) {
				t.Fatalf("errors\n got %+v\nwant %+v\nfull: %v", got, tt.want, errs)
			}
			for _, fe := range errs {
				if fe.Row != 5 {
					t.Errorf("error %+v has row %d, want 5", fe, fe.Row)
				}
				if fe.Message == "" {
					t.Errorf("error %+v has no message", fe)
				}
				if fe.Code == rows.CodePanic && !strings.Contains(fe.Message, "boom") {
					t.Errorf("panic error %q does not carry the panic value", fe.Message)
				}
			}
		})
	}
}

func TestRunReturnsTheBoundRow(t *testing.T) {
	t.Parallel()

	b := setup(t)
	got, errs := b.p.Run(context.Background(), b.m, rows.Record{Row: 2, Values: valid})
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	want := customer{Email: "jane@example.com", Name: "Jane", Age: 30, Born: time.Date(1990, 5, 1, 0, 0, 0, 0, time.UTC), Country: "NL", Code: "C1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
}

func TestRunColumnAsSpelledByAlias(t *testing.T) {
	t.Parallel()

	p, err := validate.New[customer]()
	if err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{"E-Mail", "MAIL", "Email"} {
		m, err := p.Binder().Map([]string{"name", spelling})
		if err != nil {
			t.Fatalf("Map: %v", err)
		}
		_, errs := p.Run(context.Background(), m, rows.Record{Row: 3, Values: []string{"Jane", "nope"}})
		var got []string
		for _, fe := range errs {
			if fe.Field == "Email" {
				got = append(got, fe.Column)
			}
		}
		if !slices.Equal(got, []string{spelling}) {
			t.Errorf("header %q: Email errors name columns %q, want [%q]", spelling, got, spelling)
		}
	}
}

// TestRunReaderErrorIsNotReportedAgain reads a real file whose email cell
// is too long: the reader empties it, and the declarative phase must not
// then also call it required.
func TestRunReaderErrorIsNotReportedAgain(t *testing.T) {
	t.Parallel()

	p, err := validate.New[customer]()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 40) + "@example.com"
	input := "name, E-Mail ,age,born\nJane," + long + ",30,1990-05-01\n"
	r, err := csvfile.NewReader(strings.NewReader(input), "c.csv", &csvfile.Options{MaxCellBytes: 32})
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map(r.Header())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	_, errs := p.Run(context.Background(), m, rec)
	if got, want := reduce(errs), []want{{"E-Mail", "Email", rows.CodeCellTooLong}}; !slices.Equal(got, want) {
		t.Errorf("errors %+v, want %+v (full: %v)", got, want, errs)
	}
}

// kindNoHooks tries to opt out of validation by implementing every hook as
// a no-op: the declarative phase still runs.
type kindNoHooks struct {
	Email string `col:"email" validate:"required,email"`
	Qty   int    `col:"qty" validate:"gte=1"`
}

func (*kindNoHooks) ValidateEmail(context.Context) error { return nil }
func (*kindNoHooks) ValidateRow(context.Context) error   { return nil }

func TestPhasesCannotBeSkipped(t *testing.T) {
	t.Parallel()

	p, err := validate.New[kindNoHooks]()
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"email", "qty"})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := p.Run(context.Background(), m, rows.Record{Row: 2, Values: []string{"nope", "0"}})
	if got, want := reduce(errs), []want{{"email", "Email", "email"}, {"qty", "Qty", "gte"}}; !slices.Equal(got, want) {
		t.Errorf("errors %+v, want %+v", got, want)
	}

	// Run is the only way through: the pipeline offers nothing that runs
	// a phase on its own or turns one off.
	var methods []string
	pt := reflect.TypeFor[*validate.Pipeline[kindNoHooks]]()
	for i := range pt.NumMethod() {
		methods = append(methods, pt.Method(i).Name)
	}
	if want := []string{"Binder", "RequiredColumns", "Run"}; !slices.Equal(methods, want) {
		t.Errorf("Pipeline methods = %v, want %v: review whether a new one lets a kind skip a phase", methods, want)
	}
}

type ctxKey struct{}

// hookRow returns whatever shape of error its Mode asks for.
type hookRow struct {
	Mode string `col:"mode"`
	Seen string // set from the context the hooks receive
}

func (h *hookRow) ValidateMode(ctx context.Context) error {
	h.Seen, _ = ctx.Value(ctxKey{}).(string)
	return nil
}

func (h *hookRow) ValidateRow(ctx context.Context) error {
	switch h.Mode {
	case "plain":
		return errors.New("plain failure")
	case "one":
		return &rows.FieldError{Field: "Mode", Code: "bad_mode", Message: "bad mode"}
	case "many":
		return rows.FieldErrors{{Field: "Mode", Message: "no code"}, {Message: "row, no code"}}
	case "wrapped":
		return fmt.Errorf("checking: %w", rows.FieldErrors{{Field: "Mode", Code: "wrapped", Message: "w"}})
	case "typed nil":
		var errs rows.FieldErrors
		return errs
	case "column only":
		return rows.FieldErrors{{Column: "Custom", Code: "custom", Message: "c"}}
	case "wrong row":
		return &rows.FieldError{Row: 999, Field: "Mode", Code: "bad_mode", Message: "m"}
	case "ctx":
		if h.Seen != "hello" {
			return errors.New("per-field hook did not get the context")
		}
		if ctx.Value(ctxKey{}) != "hello" {
			return errors.New("cross-field hook did not get the context")
		}
	}
	return nil
}

func TestRunHookResults(t *testing.T) {
	t.Parallel()

	p, err := validate.New[hookRow]()
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"MODE"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode string
		want []want
	}{
		{"", nil},
		{"plain", []want{{"", "", rows.CodeInvalid}}},
		{"one", []want{{"MODE", "Mode", "bad_mode"}}},
		{"many", []want{{"MODE", "Mode", rows.CodeInvalid}, {"", "", rows.CodeInvalid}}},
		{"wrapped", []want{{"MODE", "Mode", "wrapped"}}},
		{"typed nil", nil},
		{"column only", []want{{"Custom", "", "custom"}}},
		{"wrong row", []want{{"MODE", "Mode", "bad_mode"}}},
		{"ctx", nil},
	}
	ctx := context.WithValue(context.Background(), ctxKey{}, "hello")
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			_, errs := p.Run(ctx, m, rows.Record{Row: 4, Values: []string{tt.mode}})
			if got := reduce(errs); !slices.Equal(got, tt.want) {
				t.Fatalf("errors %+v, want %+v (full: %v)", got, tt.want, errs)
			}
			for _, fe := range errs {
				if fe.Row != 4 {
					t.Errorf("error row %d, want the record's row 4", fe.Row)
				}
			}
		})
	}
}

func TestRunConcurrent(t *testing.T) {
	t.Parallel()

	b := setup(t)
	inputs := [][]string{
		valid,
		with(map[int]string{1: "panic"}),
		with(map[int]string{6: "panic"}),
		with(map[int]string{0: "x", 2: "y"}),
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				in := inputs[(g+i)%len(inputs)]
				_, errs := b.p.Run(context.Background(), b.m, rows.Record{Row: int64(i + 2), Values: in})
				if (len(errs) == 0) != (&in[0] == &valid[0]) {
					t.Errorf("input %q: errors %v", in, errs)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestRequiredColumns(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		new  func() ([]string, error)
		want []string
	}{
		{"customer", func() ([]string, error) {
			p, err := validate.New[customer]()
			if err != nil {
				return nil, err
			}
			return p.RequiredColumns(), nil
		}, []string{"email", "name", "born"}},
		{"none", func() ([]string, error) {
			p, err := validate.New[hookRow]()
			if err != nil {
				return nil, err
			}
			return p.RequiredColumns(), nil
		}, nil},
		{"declared name, not required_if or internal", func() ([]string, error) {
			p, err := validate.New[struct {
				A string `col:"Alpha,alias=a" validate:"required"`
				B string `col:"b" validate:"required_if=A x"`
				D string `validate:"required"`
			}]()
			if err != nil {
				return nil, err
			}
			return p.RequiredColumns(), nil
		}, []string{"Alpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.new()
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("RequiredColumns() = %q, want %q", got, tt.want)
			}
		})
	}
}

type sigNoCtx struct {
	A string `col:"a"`
}

func (*sigNoCtx) ValidateA() error { return nil }

type sigBool struct {
	A string `col:"a"`
}

func (*sigBool) ValidateA(context.Context) bool { return true }

type sigExtraArg struct {
	A string `col:"a"`
}

func (*sigExtraArg) ValidateA(context.Context, string) error { return nil }

type sigTwoResults struct {
	A string `col:"a"`
}

func (*sigTwoResults) ValidateA(context.Context) (bool, error) { return true, nil }

type sigString struct {
	A string `col:"a"`
}

func (*sigString) ValidateA(string) error { return nil }

type sigValueReceiver struct {
	A string `col:"a"`
}

func (s sigValueReceiver) ValidateA(context.Context) error {
	if s.A == "bad" {
		return errors.New("bad a")
	}
	return nil
}

func TestNewPerFieldSignature(t *testing.T) {
	t.Parallel()

	bad := map[string]func() error{
		"no context":  func() error { _, err := validate.New[sigNoCtx](); return err },
		"bool result": func() error { _, err := validate.New[sigBool](); return err },
		"extra arg":   func() error { _, err := validate.New[sigExtraArg](); return err },
		"two results": func() error { _, err := validate.New[sigTwoResults](); return err },
		"string arg":  func() error { _, err := validate.New[sigString](); return err },
	}
	for name, newFn := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := newFn()
			if err == nil || !strings.Contains(err.Error(), "ValidateA must be func(context.Context) error") {
				t.Errorf("New = %v, want a signature error for ValidateA", err)
			}
		})
	}

	t.Run("value receiver is fine and called", func(t *testing.T) {
		t.Parallel()
		p, err := validate.New[sigValueReceiver]()
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		m, err := p.Binder().Map([]string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		_, errs := p.Run(context.Background(), m, rows.Record{Row: 2, Values: []string{"bad"}})
		if got, want := reduce(errs), []want{{"a", "A", rows.CodeInvalid}}; !slices.Equal(got, want) {
			t.Errorf("errors %+v, want %+v", got, want)
		}
	})
}

func TestNewRejectsBadTypes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		new      func() error
		contains string
	}{
		{"unknown tag", func() error {
			_, err := validate.New[struct {
				A string `col:"a" validate:"requird"`
			}]()
			return err
		}, "requird"},
		{"bad param", func() error {
			_, err := validate.New[struct {
				A int `col:"a" validate:"gte=abc"`
			}]()
			return err
		}, "abc"},
		{"bad param after required", func() error {
			_, err := validate.New[struct {
				A int `col:"a" validate:"required,gte=abc"`
			}]()
			return err
		}, `.A: check "gte=abc"`},
		{"bad param after omitempty", func() error {
			_, err := validate.New[struct {
				A string `col:"a" validate:"omitempty,max=ten"`
			}]()
			return err
		}, `.A: check "max=ten"`},
		{"bad param on a pointer", func() error {
			_, err := validate.New[struct {
				A *int `col:"a" validate:"omitnil,lte=x"`
			}]()
			return err
		}, `.A: check "lte=x"`},
		{"bad param behind an or", func() error {
			_, err := validate.New[struct {
				A string `col:"a" validate:"required,len=2|len=z"`
			}]()
			return err
		}, `.A: check "len=z"`},
		{"bad param on an internal field", func() error {
			_, err := validate.New[struct {
				A string `col:"a"`
				B uint   `validate:"required,max=-1"`
			}]()
			return err
		}, `.B: check "max=-1"`},
		{"keys without dive", func() error {
			_, err := validate.New[struct {
				A string `col:"a" validate:"keys"`
			}]()
			return err
		}, "keys"},
		{"not a struct", func() error {
			_, err := validate.New[int]()
			return err
		}, "not a struct"},
		{"pointer type", func() error {
			_, err := validate.New[*customer]()
			return err
		}, "validator: (nil **"},
		{"no col tags", func() error {
			_, err := validate.New[struct {
				A string `validate:"required"`
			}]()
			return err
		}, "no field with a col tag"},
		{"unsupported field", func() error {
			_, err := validate.New[struct {
				A []int `col:"a"`
			}]()
			return err
		}, "unsupported field type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("New panicked: %v", r)
				}
			}()
			err := tt.new()
			if err == nil {
				t.Fatal("New = nil error, want the type rejected")
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

// TestNewAcceptsGoodTags guards against a New so strict it rejects tags
// that are fine: cross-field, conditional, or/dive forms.
func TestNewAcceptsGoodTags(t *testing.T) {
	t.Parallel()

	type good struct {
		A    string  `col:"a" validate:"required,email,max=254"`
		B    string  `col:"b" validate:"required_if=A x,omitempty,min=2"`
		C    string  `col:"c" validate:"eqfield=A"`
		D    int     `col:"d" validate:"gte=0,lte=100"`
		E    string  `col:"e" validate:"omitempty,oneof=red green 'dark blue'"`
		F    string  `col:"f" validate:"len=2|len=3"`
		G    *int    `col:"g" validate:"omitnil,gt=0"`
		H    float64 `col:"h" validate:"gtefield=D"`
		I    string  `col:"i" validate:"omitempty,iso3166_1_alpha2"`
		J    string  `col:"j" validate:"excluded_with=A"`
		K    string  `col:"k" validate:"-"`
		Time time.Time
	}
	if _, err := validate.New[good](); err != nil {
		t.Fatalf("New rejected good tags: %v", err)
	}
}
