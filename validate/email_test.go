package validate

import (
	"testing"

	"github.com/go-playground/validator/v10"
)

var emailCases = []string{
	"a@b.co", "john.doe@example.com", "o'brien+tag@mail.example.de", "x@example.c0m", "x@ex--ample.com",
	"x@-example.com", "x@example-.com", "x@example", "x@example.com.", ".x@example.com", "x.@example.com",
	"x..y@example.com", "x@example..com", "@example.com", "x@", "x@@example.com", "\"quoted\"@example.com",
	"jürgen@example.de", "x@exämple.de", "x y@example.com", "x@example.com ", "X@EXAMPLE.COM", "1@2.3",
	"a@b.c", "a@1.b", "{x}|y@z.io", "x@a.b-c", "x@a.b1", "x@xn--bcher-kva.example", "Name <x@example.com>",
}

// TestEmailCheck: the check answers as validator's own email check for
// plain, tricky and foreign addresses alike.
func TestEmailCheck(t *testing.T) {
	plain := validator.New()
	fast := validator.New()
	if err := fast.RegisterValidation("email", emailCheck()); err != nil {
		t.Fatal(err)
	}
	for _, s := range emailCases {
		want := plain.Var(s, "email") == nil
		if got := fast.Var(s, "email") == nil; got != want {
			t.Errorf("%q: email check says %v, validator's own %v", s, got, want)
		}
	}
	for _, s := range []string{"a@b.co", "john.doe@example.com", "o'brien+tag@mail.example.de"} {
		if !simpleEmail(s) {
			t.Errorf("%q: not read as a plain address", s)
		}
	}
}

// FuzzSimpleEmail: every address simpleEmail accepts, validator's own
// email check accepts as well.
func FuzzSimpleEmail(f *testing.F) {
	for _, s := range emailCases {
		f.Add(s)
	}
	plain := validator.New()
	f.Fuzz(func(t *testing.T, s string) {
		if simpleEmail(s) && plain.Var(s, "email") != nil {
			t.Fatalf("%q: simpleEmail accepts what validator refuses", s)
		}
	})
}
