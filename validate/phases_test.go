package validate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/validate"
)

// logKey carries a test's log to the hooks: the pipeline builds each row
// from its zero value, so the hooks reach the log through the context.
type logKey struct{}

// TestPhasesRunInOrder shows the fixed sequence: bind, declarative, per
// field (in field order, only for fields that passed), then the row hook,
// and that a kind cannot change it: the hooks run in the pipeline's order
// however the type declares its methods.
func TestPhasesRunInOrder(t *testing.T) {
	t.Parallel()
	p, err := validate.New[loggedRow]()
	if err != nil {
		t.Fatal(err)
	}
	// Columns in another order than the fields: the per-field phase still
	// goes in field order.
	m, err := p.Binder().Map([]string{"label", "code", "qty"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		values []string
		log    []string
		codes  []rows.Code
	}{
		{"all pass", []string{"L1", "C", "2"}, []string{"field:Qty", "field:Code", "field:Label=L1", "row"}, nil},
		// Qty fails binding and Code the declarative phase: their
		// per-field hooks are skipped, the rest still run.
		{"failed fields skip their hook", []string{"L2", "", "x"}, []string{"field:Label=L2", "row"}, []rows.Code{rows.CodeNotANumber, "required"}},
		{"declarative before per field", []string{"L3", "C", "0"}, []string{"field:Code", "field:Label=L3", "row"}, []rows.Code{"gte"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log []string
			ctx := context.WithValue(context.Background(), logKey{}, &log)
			_, errs := p.Run(ctx, m, rows.Record{Row: 2, Values: tt.values})
			if !slices.Equal(log, tt.log) {
				t.Errorf("phases ran %v, want %v", log, tt.log)
			}
			var codes []rows.Code
			for _, fe := range errs {
				codes = append(codes, fe.Code)
			}
			if !slices.Equal(codes, tt.codes) {
				t.Errorf("codes %v, want %v", codes, tt.codes)
			}
		})
	}
}

// loggedRow is orderRow with hooks that log through the context.
type loggedRow struct {
	Qty   int    `col:"qty" validate:"gte=1"`
	Code  string `col:"code" validate:"required"`
	Label string `col:"label"`
}

func logf(ctx context.Context, s string) {
	if l, ok := ctx.Value(logKey{}).(*[]string); ok {
		*l = append(*l, s)
	}
}

// The methods are declared in reverse: order comes from the pipeline.
func (r *loggedRow) ValidateRow(ctx context.Context) error { logf(ctx, "row"); return nil }
func (r *loggedRow) ValidateLabel(ctx context.Context) error {
	logf(ctx, "field:Label="+r.Label)
	return nil
}
func (r *loggedRow) ValidateCode(ctx context.Context) error { logf(ctx, "field:Code"); return nil }
func (r *loggedRow) ValidateQty(ctx context.Context) error  { logf(ctx, "field:Qty"); return nil }

// namedRow has tags whose messages name other fields.
type namedRow struct {
	Email    string `col:"email,alias=E-Mail" validate:"required_without=Phone"`
	Phone    string `col:"phone,alias=Telefon"`
	Password string `col:"password"`
	Confirm  string `col:"confirm" validate:"eqfield=Password"`
}

// TestMessagesNameColumns: validator knows the fields by their column
// (RegisterTagNameFunc), and a message that names another field names it
// as the user's file does.
func TestMessagesNameColumns(t *testing.T) {
	t.Parallel()
	p, err := validate.New[namedRow]()
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"E-Mail", "Telefon", "Password", "Confirm"})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := p.Run(context.Background(), m, rows.Record{Row: 3, Values: []string{"", "", "a", "b"}})
	var got []string
	for _, fe := range errs {
		got = append(got, fe.Column+": "+fe.Message)
	}
	want := []string{"E-Mail: is required when Telefon is empty", "Confirm: must equal Password"}
	if !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
	for _, fe := range errs {
		if strings.Contains(fe.Message, "Phone") {
			t.Errorf("message %q names the Go field", fe.Message)
		}
	}
}

// decimalRow checks that a Decimal takes part in the declarative phase.
type decimalRow struct {
	Amount rows.Decimal  `col:"amount" validate:"gte=0,lte=1000"`
	Opt    *rows.Decimal `col:"opt" validate:"omitempty,gt=0"`
}

func TestDecimalDeclarative(t *testing.T) {
	t.Parallel()
	p, err := validate.New[decimalRow]()
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Binder().Map([]string{"amount", "opt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		values []string
		codes  string
	}{
		{[]string{"0", ""}, ""},
		{[]string{"1000.00", "0.01"}, ""},
		{[]string{"-0.01", ""}, "gte"},
		{[]string{"1000.01", "0"}, "lte gt"},
	} {
		_, errs := p.Run(context.Background(), m, rows.Record{Row: 2, Values: tt.values})
		var codes []string
		for _, fe := range errs {
			codes = append(codes, string(fe.Code))
		}
		if strings.Join(codes, " ") != tt.codes {
			t.Errorf("%q: codes %v, want %q", tt.values, codes, tt.codes)
		}
	}
}
