package rows

import "errors"

// Option names an import option in a Hint. Each front end spells it its
// own way: the CLI as a flag (--decimal-comma), the API as its field
// (decimal_comma), the admin page as its control. A message names the
// option in words, never as one front end spells it: messages are stored
// with rows and read by all of them.
type Option string

// The options a hint names.
const (
	// OptionLocale is the file's number format by locale; Values are
	// the locales that would read the value (en, de, fr, ch).
	OptionLocale Option = "locale"
	// OptionDecimalComma says the file writes numbers with a decimal
	// comma; it takes no value.
	OptionDecimalComma Option = "decimal_comma"
	// OptionDateOrder is the order of day and month in numeric dates;
	// Values are the orders to choose from (dmy, mdy).
	OptionDateOrder Option = "date_order"
	// OptionDateFormat is what a file's compact dates (070125) mean;
	// Values are the forms that would read the value (ddmmyy, yymmdd,
	// ...).
	OptionDateFormat Option = "date_format"
	// OptionMap maps a file's column onto a kind's column; Values is
	// "FILE COLUMN=KIND COLUMN".
	OptionMap Option = "map"
	// OptionIgnore says a file's column is not the kind's; Values is the
	// column, as the header spells it.
	OptionIgnore Option = "ignore"
)

// Hint is an import option that would settle what an error is about,
// with the values that would (none for a switch). A value's hints are
// alternatives: any one of them settles it.
type Hint struct {
	Option Option   `json:"option"`
	Values []string `json:"values,omitempty"`
}

// hinted is an error that knows the options that settle it.
type hinted interface{ Hints() []Hint }

// HintsOf returns the hints of err, or of an error it wraps; nil when it
// has none.
func HintsOf(err error) []Hint {
	var h hinted
	if errors.As(err, &h) {
		return h.Hints()
	}
	return nil
}

// WithHints returns err carrying hints, for HintsOf: an error that rejects
// a file says in words what would settle it, and carries the options as
// data. It returns err itself when there are none.
func WithHints(err error, hints ...Hint) error {
	if len(hints) == 0 {
		return err
	}
	return &hintedError{err: err, hints: hints}
}

type hintedError struct {
	err   error
	hints []Hint
}

func (e *hintedError) Error() string { return e.err.Error() }
func (e *hintedError) Unwrap() error { return e.err }
func (e *hintedError) Hints() []Hint { return e.hints }
