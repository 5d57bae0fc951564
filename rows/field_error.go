package rows

import (
	"fmt"
	"strings"
)

// Code is a stable, machine-readable reason for a field error. Codes are
// persisted and append-only; users match on them, never on messages.
type Code string

// Codes produced by binding and reading. Declarative validation uses the
// validator tag as its code (required, email, gte, ...).
const (
	CodeRequired    Code = "required"
	CodeNotANumber  Code = "not_a_number"
	CodeNotABool    Code = "not_a_bool"
	CodeBadDate     Code = "bad_date"
	CodeOutOfRange  Code = "out_of_range"
	CodeInvalid     Code = "invalid"
	CodeRaggedRow   Code = "ragged_row"
	CodeBadEncoding Code = "bad_encoding"
	CodeNulByte     Code = "nul_byte"
	CodeCellTooLong Code = "cell_too_long"
	CodePanic       Code = "panic"
	// CodeOneOf is a value outside an Enum's list; the declarative
	// oneof tag uses the same code.
	CodeOneOf Code = "oneof"
	// CodeDuplicateKey is a row whose natural key an earlier row of the
	// same file already has.
	CodeDuplicateKey Code = "duplicate_key"
	// CodeExhausted is a row that used every attempt.
	CodeExhausted Code = "attempts_exhausted"
	// CodeCancelledLate is a row whose processor finished after its batch
	// was cancelled: the effect may have happened.
	CodeCancelledLate Code = "cancelled_late"
	// CodeSkipped is a row a reviewer skipped; the message says who and
	// why.
	CodeSkipped Code = "skipped"
	// CodeKeyReused is a row whose effect key was claimed before with
	// another payload.
	CodeKeyReused Code = "key_reused"
	// CodeUnreadableLine is a line of a text file that cannot be read as
	// a row with certainty (a quote that never closes, or neither doubled
	// nor a cell's end): the row's one cell is the line's raw text, and
	// the file goes on at the next line.
	CodeUnreadableLine Code = "unreadable_line"
	// CodeSecondTable is a row of a text file that belongs to a second
	// table further down the file (the header repeated, or a table of
	// another shape after a blank line), not to the file's table.
	CodeSecondTable Code = "second_table"
)

// FieldError explains why one field (or the whole row, when Column is empty)
// of one row is not acceptable. It is data, not a Go failure: a row with
// field errors is stored as invalid and the batch goes on.
type FieldError struct {
	// Row is the row number as a spreadsheet user counts it (the header is
	// row 1 of a CSV file).
	Row int64 `json:"row,omitempty"`
	// Column is the column name as the user's file spells it.
	Column string `json:"column,omitempty"`
	// Field is the Go field name of the kind's struct.
	Field   string `json:"field,omitempty"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// Hints are the import options that would settle the error (a
	// decimal comma, a date order), as data: each front end names them
	// its own way, the message only in words.
	Hints []Hint `json:"hints,omitempty"`
}

// Error formats the error as "row 7, column email: must be a valid email".
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Row > 0 {
		fmt.Fprintf(&b, "row %d", e.Row)
	}
	if e.Column != "" {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "column %s", e.Column)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// FieldErrors is the set of errors of one row. It implements error so that a
// cross-field hook can return several at once.
type FieldErrors []FieldError

// Error joins the messages as "email: must be a valid email; amount: ...".
func (es FieldErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		if e.Column != "" {
			parts[i] = e.Column + ": " + e.Message
		} else {
			parts[i] = e.Message
		}
	}
	return strings.Join(parts, "; ")
}

// FileError is an error that rejects a whole file: nothing of it is written.
// It names the file and, where known, the line.
type FileError struct {
	File string
	// Line is the physical line number where the problem was found; 0 when
	// the problem is not tied to a line.
	Line int64
	Err  error
}

// Error formats the error as "customers.csv: line 3: reason".
func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: line %d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap returns the reason.
func (e *FileError) Unwrap() error { return e.Err }
