package rows

import (
	"errors"
	"io"
	"testing"
)

func TestFieldErrorError(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  FieldError
		want string
	}{
		{"row and column", FieldError{Row: 7, Column: "email", Message: "must be a valid email"}, "row 7, column email: must be a valid email"},
		{"row only", FieldError{Row: 3, Message: "row has 2 cells"}, "row 3: row has 2 cells"},
		{"column only", FieldError{Column: "amount", Message: "is required"}, "column amount: is required"},
		{"message only", FieldError{Message: "bad"}, "bad"},
		{"field is not shown", FieldError{Row: 2, Field: "Email", Message: "x"}, "row 2: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFieldErrorsError(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		errs FieldErrors
		want string
	}{
		{"none", nil, ""},
		{"one", FieldErrors{{Column: "email", Message: "is required"}}, "email: is required"},
		{"several", FieldErrors{{Column: "email", Message: "is required"}, {Message: "row is odd"}, {Column: "amount", Message: "must be ≥ 0"}}, "email: is required; row is odd; amount: must be ≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.errs.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			// A cross-field hook returns FieldErrors as an error; it must
			// come back out with errors.As.
			var err error = tt.errs
			var back FieldErrors
			if !errors.As(err, &back) || len(back) != len(tt.errs) {
				t.Errorf("errors.As(FieldErrors) = %v, %d errors; want %d", back, len(back), len(tt.errs))
			}
		})
	}
}

func TestFileError(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		err  *FileError
		want string
	}{
		{"with line", &FileError{File: "customers.csv", Line: 3, Err: io.ErrUnexpectedEOF}, "customers.csv: line 3: unexpected EOF"},
		{"without line", &FileError{File: "customers.csv", Err: io.ErrUnexpectedEOF}, "customers.csv: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, io.ErrUnexpectedEOF) {
				t.Error("errors.Is(FileError, its reason) = false")
			}
		})
	}
}
