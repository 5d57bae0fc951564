package batch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// FileOptions are what a user says about a file, as text: batchctl's
// flags, the HTTP API's options. Apply checks them and sets them on an
// import's parameters. What is left empty is detected (encoding,
// delimiter, sheet, header) or settled from the file's own values (number
// format, date order), never guessed.
type FileOptions struct {
	// Encoding is a text file's character set (utf-8, utf-16, utf-16le,
	// utf-16be, windows-1252).
	Encoding string
	// Delimiter is a text file's field delimiter: one character, or tab.
	Delimiter string
	// Quote is a text file's quote character: " (the default) or '.
	Quote string
	// Escape is the character that escapes a quote inside a quoted cell
	// of a text file, as in \": \ or another one punctuation character.
	// Defaults to none: quotes are doubled.
	Escape string
	// Sheet is a workbook's sheet, by name or 1-based position.
	Sheet string
	// HeaderRow is the 1-based row of the header.
	HeaderRow int64
	// Locale is the number format: en, de, fr, ch, or a language-region.
	Locale string
	// DecimalComma says numbers are written with a decimal comma.
	DecimalComma bool
	// DateOrder is dmy or mdy.
	DateOrder string
	// DateFormat is what compact dates (070125) mean: ddmmyy, yymmdd,
	// mmddyy, ddmmyyyy, yyyymmdd, mmddyyyy, serial (Excel serial
	// numbers), or a strptime pattern such as %d.%m.%Y (rows.DateFormat).
	DateFormat string
	// Renames map file columns onto the kind's columns.
	Renames []rows.Rename
	// Ignore are file columns the kind does not read, as the header spells
	// them: a column that looks like one of the kind's, which stops an
	// import, is ignored when named here.
	Ignore []string
}

// OptionError is a FileOptions value Apply refused, naming the option as
// FileOptions' field in snake case ("delimiter", "date_order"), so that
// each caller can name it its own way (--date-order, options.date_order).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *OptionError) Unwrap() error { return e.Err }

// Apply checks the options and sets p.Read (keeping its TmpDir) and
// p.Conventions.
func (o FileOptions) Apply(p *ImportParams) error {
	d, err := fileformat.Delimiter(o.Delimiter)
	if err != nil {
		return &OptionError{"delimiter", err}
	}
	q, err := quoteChar(o.Quote, true)
	if err != nil {
		return &OptionError{"quote", err}
	}
	esc, err := quoteChar(o.Escape, false)
	if err != nil {
		return &OptionError{"escape", err}
	}
	if _, err := fileformat.Encoding(o.Encoding); err != nil {
		return &OptionError{"encoding", err}
	}
	if o.HeaderRow < 0 {
		return &OptionError{"header_row", fmt.Errorf("must be 1 or more, not %d", o.HeaderRow)}
	}
	var c rows.Conventions
	switch {
	case o.Locale != "" && o.DecimalComma:
		return &OptionError{"locale", errors.New("locale and decimal comma both say how numbers are written: give one")}
	case o.Locale != "":
		nf, err := rows.LocaleNumberFormat(o.Locale)
		if err != nil {
			return &OptionError{"locale", err}
		}
		c.Number = nf
	case o.DecimalComma:
		c.Number = rows.DecimalComma
	}
	if c.DateOrder, err = rows.ParseDateOrder(o.DateOrder); err != nil {
		return &OptionError{"date_order", err}
	}
	if c.DateFormat, err = rows.ParseDateFormat(o.DateFormat); err != nil {
		return &OptionError{"date_format", err}
	}
	for _, r := range o.Renames {
		if r.From == "" || r.To == "" {
			return &OptionError{"map", fmt.Errorf("%q=%q: want 'file column=kind column'", r.From, r.To)}
		}
	}
	c.Renames = o.Renames
	for _, col := range o.Ignore {
		if strings.TrimSpace(col) == "" {
			return &OptionError{"ignore", errors.New("want the name of a column of the file")}
		}
		c.Ignore = append(c.Ignore, strings.TrimSpace(col))
	}
	p.Read = rows.ReadOptions{Encoding: o.Encoding, Delimiter: d, Quote: q, Escape: esc, Sheet: o.Sheet, HeaderRow: o.HeaderRow, TmpDir: p.Read.TmpDir}
	p.Conventions = c
	p.Read.Number = c.Number // a workbook's typed numbers are written in it
	return nil
}

// quoteChar reads a quote character (quote) or an escape character as
// users type it: the character, or its name; "" is 0, the default.
func quoteChar(s string, quote bool) (rune, error) {
	switch s {
	case "":
		return 0, nil
	case "double":
		s = `"`
	case "single", "apostrophe":
		s = "'"
	case "backslash":
		s = `\`
	}
	if quote && s != `"` && s != "'" {
		return 0, fmt.Errorf("%q: want \" or '", s)
	}
	if len(s) != 1 || s[0] <= ' ' || s[0] >= 0x7F || s[0] >= '0' && s[0] <= '9' || (s[0]|0x20) >= 'a' && (s[0]|0x20) <= 'z' {
		return 0, fmt.Errorf("%q: want one punctuation character, such as \\", s)
	}
	return rune(s[0]), nil
}
