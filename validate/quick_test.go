package validate

import (
	"reflect"
	"testing"
	"time"

	"github.com/go-playground/validator/v10"

	"github.com/rowfate/rowfate/rows"
)

// quickRow has a field of every kind quick reads, under every check it
// knows, in the orders a kind writes them.
type quickRow struct {
	Email    string                      `col:"email" validate:"required,email,max=254"`
	Name     string                      `col:"name" validate:"required,min=2,max=5"`
	Code     string                      `col:"code" validate:"omitempty,len=3"`
	Tier     string                      `col:"tier" validate:"oneof=gold silver bronze"`
	Country  rows.Optional[string]       `col:"country" validate:"omitempty,iso3166_1_alpha2"`
	Note     rows.Optional[string]       `col:"note" validate:"omitnil,max=3"`
	Must     rows.Optional[string]       `col:"must" validate:"required"`
	Amount   rows.Optional[rows.Decimal] `col:"amount" validate:"omitempty,gte=0,lt=1000"`
	Price    rows.Decimal                `col:"price" validate:"gt=-5,lte=10"`
	Count    int                         `col:"count" validate:"min=1,max=9"`
	Level    rows.Optional[int]          `col:"level" validate:"omitempty,gte=2"`
	Signup   time.Time                   `col:"signup" validate:"required"`
	Birthday rows.Optional[time.Time]    `col:"birthday" validate:"omitempty"`
	Free     string                      `col:"free"`
}

// quickPair is a pipeline's validator and quick check of quickRow.
func quickPair(t testing.TB) (*validator.Validate, *quickCheck) {
	t.Helper()
	p, err := New[quickRow]()
	if err != nil {
		t.Fatal(err)
	}
	if p.quick == nil {
		t.Fatal("quickRow has no quick check")
	}
	return p.validator, p.quick
}

// FuzzQuickCheck: every row quick passes, validator passes as well.
func FuzzQuickCheck(f *testing.F) {
	f.Add("a@b.co", "Anna", "", "gold", "DE", true, "", false, "x", true, int64(5000), 2, true, int64(-100), 2, int64(3), true, int64(45000), false)
	f.Add("ä@b.co", "Jürgen", "abc", "iron", "XX", true, "abcd", true, "", true, int64(-1), 2, true, int64(1000), 2, int64(0), true, int64(1), true)
	f.Add("x@y.de", "Bo", "äöü", "silver", "", true, "", true, "m", true, int64(0), 0, false, int64(0), 0, int64(9), false, int64(0), false)
	f.Add("x@y.de", "Bo", "ab", "bronze", "de", true, "abc", true, "", false, int64(99999), 2, true, int64(1001), 2, int64(10), true, int64(2), true)
	f.Fuzz(func(t *testing.T, email, name, code, tier, country string, countrySet bool, note string, noteSet bool,
		must string, mustSet bool, amount int64, amountScale int, amountSet bool, price int64, priceScale int,
		count int64, levelSet bool, level int64, signupSet bool) {
		v, q := quickPair(t)
		r := quickRow{
			Email: email, Name: name, Code: code, Tier: tier,
			Country: rows.Optional[string]{Value: country, Set: countrySet},
			Note:    rows.Optional[string]{Value: note, Set: noteSet},
			Must:    rows.Optional[string]{Value: must, Set: mustSet},
			Amount:  rows.Optional[rows.Decimal]{Value: rows.NewDecimal(amount, int(uint(amountScale)%6)), Set: amountSet},
			Price:   rows.NewDecimal(price, int(uint(priceScale)%6)),
			Count:   int(count),
			Level:   rows.Optional[int]{Value: int(level), Set: levelSet},
		}
		if signupSet {
			r.Signup = time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
		}
		if q.passes(&r) {
			if err := v.Struct(&r); err != nil {
				t.Fatalf("quick passed %+v, validator: %v", r, err)
			}
		}
	})
}

// TestQuickCheckPasses: the rows quick is for, valid ones, it passes
// (else it would only cost time), and each invalid one it leaves to
// validator.
func TestQuickCheckPasses(t *testing.T) {
	v, q := quickPair(t)
	valid := quickRow{Email: "a@b.co", Name: "Anna", Tier: "gold", Country: rows.Some("DE"), Must: rows.Some("x"),
		Amount: rows.Some(rows.NewDecimal(5000, 2)), Price: rows.NewDecimal(-4, 0), Count: 1,
		Signup: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)}
	if !q.passes(&valid) || v.Struct(&valid) != nil {
		t.Fatalf("a valid row: quick %v, validator %v", q.passes(&valid), v.Struct(&valid))
	}
	for name, change := range map[string]func(*quickRow){
		"email":        func(r *quickRow) { r.Email = "a@b" },
		"long name":    func(r *quickRow) { r.Name = "Jürgens" },
		"code":         func(r *quickRow) { r.Code = "abcd" },
		"tier":         func(r *quickRow) { r.Tier = "Gold" },
		"country":      func(r *quickRow) { r.Country = rows.Some("XX") },
		"note":         func(r *quickRow) { r.Note = rows.Some("long") },
		"must unset":   func(r *quickRow) { r.Must = rows.Optional[string]{} },
		"must empty":   func(r *quickRow) { r.Must = rows.Some("") },
		"amount":       func(r *quickRow) { r.Amount = rows.Some(rows.NewDecimal(100000, 2)) },
		"price":        func(r *quickRow) { r.Price = rows.NewDecimal(-5, 0) },
		"count":        func(r *quickRow) { r.Count = 10 },
		"level":        func(r *quickRow) { r.Level = rows.Some(1) },
		"no signup":    func(r *quickRow) { r.Signup = time.Time{} },
		"empty note":   func(r *quickRow) { r.Note = rows.Some("") }, // omitnil checks a given empty value: it passes max=3
		"empty amount": func(r *quickRow) { r.Amount = rows.Some(rows.Decimal{}) },
	} {
		r := valid
		change(&r)
		quick, err := q.passes(&r), v.Struct(&r)
		if quick && err != nil {
			t.Errorf("%s: quick passed a row validator fails: %v", name, err)
		}
		if !quick && err == nil {
			t.Errorf("%s: quick did not pass a row validator passes", name)
		}
	}
}

// TestCompileQuick: a row type with a check quick does not know, or one
// a kind replaced with its own, is validator's alone.
func TestCompileQuick(t *testing.T) {
	type nested struct {
		A string `validate:"required"`
	}
	for name, tc := range map[string]struct {
		typ    reflect.Type
		custom map[string]validator.Func
		want   bool
	}{
		"known": {typ: reflect.TypeFor[quickRow](), want: true},
		"or": {typ: reflect.TypeFor[struct {
			A string `validate:"email|len=2"`
		}]()},
		"cross field": {typ: reflect.TypeFor[struct {
			A string `validate:"eqfield=B"`
			B string
		}]()},
		"nested": {typ: reflect.TypeFor[struct{ N nested }]()},
		"embedded": {typ: reflect.TypeFor[struct {
			nested
		}]()},
		"pointer": {typ: reflect.TypeFor[struct {
			A *string `validate:"required"`
		}]()},
		"quoted oneof": {typ: reflect.TypeFor[struct {
			A string `validate:"oneof='a b' c"`
		}]()},
		"fraction": {typ: reflect.TypeFor[struct {
			A rows.Decimal `validate:"gte=0.5"`
		}]()},
		"omitempty later": {typ: reflect.TypeFor[struct {
			A string `validate:"max=2,omitempty"`
		}]()},
		"own email": {typ: reflect.TypeFor[struct {
			A string `validate:"email"`
		}](), custom: map[string]validator.Func{"email": func(validator.FieldLevel) bool { return true }}},
	} {
		if got := compileQuick(tc.typ, tc.custom) != nil; got != tc.want {
			t.Errorf("%s: quick check %v, want %v", name, got, tc.want)
		}
	}
}
