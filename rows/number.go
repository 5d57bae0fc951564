package rows

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// NumberFormat says how a file writes numbers: its decimal separator and
// the thousands separators it may put between groups of three digits. The
// zero value is the plain form every program reads: a decimal point and
// no thousands separators, so "1,50" and "1.234,56" are not numbers rather
// than guesses.
type NumberFormat struct {
	// Decimal is the decimal separator, '.' or ','. Zero means '.'.
	Decimal rune `json:"decimal,omitempty"`
	// Groups are the thousands separators the file may use; none by
	// default.
	Groups []rune `json:"groups,omitempty"`
}

// Non-breaking spaces, which spreadsheets and French number formats put
// between groups of digits.
const (
	nbsp       = '\u00a0'
	narrowNBSP = '\u202f'
)

// Locales are the number formats a user can name (--locale): each is the
// decimal separator and the thousands separators that locale writes, and
// only those.
var locales = map[string]NumberFormat{
	"en": {Decimal: '.', Groups: []rune{','}},
	"de": {Decimal: ',', Groups: []rune{'.'}},
	"fr": {Decimal: ',', Groups: []rune{' ', nbsp, narrowNBSP}},
	"ch": {Decimal: '.', Groups: []rune{'\'', '’'}},
}

// localeAliases maps common locale spellings to the table above.
var localeAliases = map[string]string{
	"en-us": "en", "en-gb": "en", "en-au": "en", "en-ca": "en", "en-ie": "en", "en-in": "en",
	"de-de": "de", "de-at": "de", "nl": "de", "nl-nl": "de", "es": "de", "es-es": "de", "it": "de", "it-it": "de",
	"pt": "de", "pt-br": "de", "da": "de", "id": "de", "tr": "de",
	"fr-fr": "fr", "fr-be": "fr", "fr-ca": "fr", "sv": "fr", "nb": "fr", "no": "fr", "fi": "fr", "cs": "fr",
	"pl": "fr", "ru": "fr", "uk": "fr", "hu": "fr", "sk": "fr",
	"de-ch": "ch", "fr-ch": "ch", "it-ch": "ch", "rm": "ch",
}

// DecimalComma is the number format of --decimal-comma: a decimal comma,
// and a point or a space between groups of thousands.
var DecimalComma = NumberFormat{Decimal: ',', Groups: []rune{'.', ' ', nbsp, narrowNBSP}}

// LocaleNumberFormat returns the number format of a locale name ("de",
// "fr-CH"), or an error listing the known ones.
func LocaleNumberFormat(locale string) (NumberFormat, error) {
	l := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(locale), "_", "-"))
	if a, ok := localeAliases[l]; ok {
		l = a
	}
	f, ok := locales[l]
	if !ok {
		names := make([]string, 0, len(locales))
		for n := range locales {
			names = append(names, n)
		}
		sort.Strings(names)
		return NumberFormat{}, fmt.Errorf("unknown locale %q: the number formats known are %s (or a language-region such as de-AT, fr-CH)", locale, strings.Join(names, ", "))
	}
	return f, nil
}

func (f NumberFormat) decimal() rune {
	if f.Decimal == 0 {
		return '.'
	}
	return f.Decimal
}

// Describe says in words how the format writes 1234.5.
func (f NumberFormat) Describe() string {
	var b strings.Builder
	b.WriteString("1")
	if len(f.Groups) > 0 {
		b.WriteRune(f.Groups[0])
	}
	b.WriteString("234")
	b.WriteRune(f.decimal())
	b.WriteString("50")
	return b.String()
}

// errNumberForm is a number written in a form the format does not read; its
// message says what the value looks like and which option would read it.
type errNumberForm struct {
	msg   string
	hints []Hint
}

func (e *errNumberForm) Error() string { return e.msg }

// Hints are the options that would read the number.
func (e *errNumberForm) Hints() []Hint { return e.hints }

// Normalize rewrites a number as f writes it into the plain form
// ParseDecimal and strconv read ("-1234.5"): thousands separators must
// separate groups of exactly three digits, and a separator f does not have
// is an error that names the option that reads the value. A plain number
// is returned as it is.
func (f NumberFormat) Normalize(s string) (string, error) {
	dec := f.decimal()
	if strings.IndexFunc(s, func(r rune) bool {
		return r == ',' || r == '.' || r == '\'' || r == '’' || r == ' ' || r == nbsp || r == narrowNBSP
	}) < 0 {
		return s, nil // digits and a sign only: every format reads it alike
	}
	var (
		b          strings.Builder
		sawDecimal bool
		groupSep   rune // the one separator used between groups
		groupLen   = -1 // digits since the last group separator; -1 before the first
		run        int  // digits in the current run
	)
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
			run++
		case (r == '-' || r == '+') && i == 0:
			b.WriteRune(r)
		case r == dec && !sawDecimal:
			if groupLen >= 0 && run != 3 {
				return "", f.formError(s)
			}
			sawDecimal = true
			b.WriteByte('.')
			run = 0
		case slices.Contains(f.Groups, r) && !sawDecimal:
			if groupSep != 0 && r != groupSep {
				return "", f.formError(s)
			}
			// The first group has 1-3 digits, every later one 3.
			if (groupLen < 0 && (run < 1 || run > 3)) || (groupLen >= 0 && run != 3) {
				return "", f.formError(s)
			}
			groupSep, groupLen, run = r, run, 0
		default:
			return "", f.formError(s)
		}
	}
	if groupLen >= 0 && !sawDecimal && run != 3 {
		return "", f.formError(s)
	}
	return b.String(), nil
}

// formError explains why s is not a number in f, and names the option
// that reads it when the value looks like another convention.
func (f NumberFormat) formError(s string) error {
	clue := NumberClueOf(s)
	hint := ""
	var hints []Hint
	switch {
	case clue == ClueDecimalComma && f.decimal() != ',':
		hint = "; it is written with a decimal comma: import with a decimal comma (or the locale de or fr)"
		hints = []Hint{{Option: OptionDecimalComma}, {Option: OptionLocale, Values: []string{"de", "fr"}}}
	case clue == ClueDecimalPoint && f.decimal() == ',':
		hint = "; it has a decimal point, but the file's numbers were declared with a decimal comma"
	case strings.ContainsAny(s, "'’") && !slices.Contains(f.Groups, '\''):
		hint = "; it has apostrophes between thousands: import with the locale ch"
		hints = []Hint{{Option: OptionLocale, Values: []string{"ch"}}}
	case strings.ContainsRune(s, ',') && f.decimal() == '.' && !slices.Contains(f.Groups, ','):
		hint = "; it has a comma: import with the locale en if the comma separates thousands, or with a decimal comma if it is the decimal separator"
		hints = []Hint{{Option: OptionLocale, Values: []string{"en"}}, {Option: OptionDecimalComma}}
	case strings.ContainsAny(s, " \u00a0\u202f") && !slices.Contains(f.Groups, ' '):
		hint = "; it has spaces between thousands: import with the locale fr"
		hints = []Hint{{Option: OptionLocale, Values: []string{"fr"}}}
	}
	if len(f.Groups) == 0 && hint == "" {
		hint = fmt.Sprintf(" (write %s: a %s for decimals, no thousands separator)", f.Describe(), decimalWord(f.decimal()))
	} else if hint == "" {
		hint = fmt.Sprintf(" in the file's number format (%s)", f.Describe())
	}
	return &errNumberForm{msg: fmt.Sprintf("%q is not a number%s", s, hint), hints: hints}
}

func decimalWord(r rune) string {
	if r == ',' {
		return "comma"
	}
	return "point"
}

// NumberClue is what one value tells about a file's decimal separator.
type NumberClue uint8

// The clues.
const (
	// ClueNone: the value says nothing (digits only, or not a number).
	ClueNone NumberClue = iota
	// ClueDecimalPoint: only a decimal point reads it ("12.5", "1,234.56").
	ClueDecimalPoint
	// ClueDecimalComma: only a decimal comma reads it ("0,5", "1.234,56").
	ClueDecimalComma
	// ClueAmbiguous: a point or a comma followed by exactly three digits,
	// once ("12.500", "1,234"): a decimal separator in one convention and a
	// thousands separator in the other.
	ClueAmbiguous
)

// NumberClueOf classifies one value by its separators.
func NumberClueOf(s string) NumberClue {
	s = strings.TrimLeft(strings.TrimSpace(s), "+-")
	lastDot, lastComma := strings.LastIndexByte(s, '.'), strings.LastIndexByte(s, ',')
	if s == "" || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == ',' || r == ' ' || r == '\'' || r == '’' || r == nbsp || r == narrowNBSP)
	}) >= 0 {
		return ClueNone
	}
	switch {
	case lastDot < 0 && lastComma < 0:
		return ClueNone
	case lastDot >= 0 && lastComma >= 0:
		// Both: the last one is the decimal separator.
		if lastComma > lastDot {
			return ClueDecimalComma
		}
		return ClueDecimalPoint
	}
	sep, last := byte('.'), lastDot
	if lastDot < 0 {
		sep, last = ',', lastComma
	}
	after := len(s) - last - 1
	if strings.Count(s, string(sep)) > 1 {
		// 1.234.567 or 1,234,567: only a thousands separator repeats.
		if sep == '.' {
			return ClueDecimalComma
		}
		return ClueDecimalPoint
	}
	// "12.500" may group thousands; "0.500" and "1234.500" cannot.
	if head := s[:last]; after == 3 && head != "0" && head != "" && utf8.RuneCountInString(head) <= 3 && !strings.ContainsAny(head, " '’\u00a0\u202f") {
		return ClueAmbiguous
	}
	if sep == '.' {
		return ClueDecimalPoint
	}
	return ClueDecimalComma
}
