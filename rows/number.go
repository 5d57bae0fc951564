package rows

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// NumberFormat says how a file writes numbers: its decimal separator and
// the thousands separators it may put between groups of three digits. The
// zero value is the plain form every program reads: a decimal point and
// no thousands separators, so "1,50" and "1.234,56" are not numbers rather
// than guesses.
//
// Its JSON writes the separators as strings ({"decimal":",","groups":["."]});
// it also reads them as the character codes batches stored before 0.9
// ({"decimal":44,"groups":[46]}).
type NumberFormat struct {
	// Decimal is the decimal separator, '.' or ','. Zero means '.'.
	Decimal rune
	// Groups are the thousands separators the file may use; none by
	// default.
	Groups []rune
}

// numberFormatJSON is NumberFormat's JSON: separators as strings.
type numberFormatJSON struct {
	Decimal string   `json:"decimal,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// MarshalJSON writes the separators as strings.
func (f NumberFormat) MarshalJSON() ([]byte, error) {
	var out numberFormatJSON
	if f.Decimal != 0 {
		out.Decimal = string(f.Decimal)
	}
	for _, g := range f.Groups {
		out.Groups = append(out.Groups, string(g))
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads separators written as strings, or as character codes.
func (f *NumberFormat) UnmarshalJSON(b []byte) error {
	var raw struct {
		Decimal json.RawMessage   `json:"decimal"`
		Groups  []json.RawMessage `json:"groups"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = NumberFormat{}
	one := func(m json.RawMessage) (rune, error) {
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			r := []rune(s)
			if len(r) != 1 {
				return 0, fmt.Errorf("number format: separator %q is not one character", s)
			}
			return r[0], nil
		}
		var n int32
		if err := json.Unmarshal(m, &n); err != nil {
			return 0, fmt.Errorf("number format: separator %s is neither a character nor a character code", m)
		}
		return n, nil
	}
	if len(raw.Decimal) > 0 && string(raw.Decimal) != "null" {
		r, err := one(raw.Decimal)
		if err != nil {
			return err
		}
		f.Decimal = r
	}
	for _, m := range raw.Groups {
		r, err := one(m)
		if err != nil {
			return err
		}
		f.Groups = append(f.Groups, r)
	}
	return nil
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

// Locales lists the locale names --locale takes, sorted: the four number
// formats and their common spellings.
func Locales() []string {
	out := make([]string, 0, len(locales)+len(localeAliases))
	for l := range locales {
		out = append(out, l)
	}
	for l := range localeAliases {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// LocaleOf returns the locale name (one of the four of locales, not an
// alias) whose number format is f, and "" when no locale writes numbers
// that way (DecimalComma, or the zero value, which is no declaration).
func LocaleOf(f NumberFormat) string {
	for _, l := range []string{"de", "en", "fr", "ch"} {
		if nf := locales[l]; nf.Decimal == f.Decimal && slices.Equal(nf.Groups, f.Groups) {
			return l
		}
	}
	return ""
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
		return r == ',' || r == '.' || r == '\'' || r == '’' || r == ' ' || r == nbsp || r == narrowNBSP ||
			r == dec || slices.Contains(f.Groups, r)
	}) < 0 {
		return s, nil // no separator: every format reads it alike
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

// NumberOptions are how one column writes its numbers when it says so
// itself (the number tag; a Table Schema field's decimalChar, groupChar
// and bareNumber), whatever the rest of the file does.
type NumberOptions struct {
	// Format, when set, replaces the file's number format for the column.
	Format *NumberFormat `json:"format,omitempty"`
	// Strip drops text before and after the number ("€ 95", "95 %"), as a
	// Table Schema's bareNumber: false says; text that would change the
	// number (a minus sign, brackets, a magnitude such as k) is refused
	// rather than dropped.
	Strip bool `json:"strip,omitempty"`
	// Exponent reads a trailing exponent: 1.5E3 is 1500.
	Exponent bool `json:"exponent,omitempty"`
}

// Tag writes the options as the number tag's value.
func (o NumberOptions) Tag() string {
	b, _ := json.Marshal(o) // a struct of runes and booleans always encodes
	return string(b)
}

// format is the column's number format: its own, else the file's.
func (o *NumberOptions) format(file NumberFormat) NumberFormat {
	if o != nil && o.Format != nil {
		return *o.Format
	}
	return file
}

// plain rewrites a cell into the plain form the parsers read.
func (o *NumberOptions) plain(s string, file NumberFormat) (string, error) {
	f := o.format(file)
	cell := s
	if o.Strip {
		var err error
		if s, err = stripNumber(s, f.decimal()); err != nil {
			return "", &convError{code: CodeNotANumber, msg: err.Error()}
		}
	}
	exp := 0
	if o.Exponent {
		// Only E and a whole number is an exponent: "5 EUR" is text.
		if i := strings.LastIndexAny(s, "eE"); i > 0 {
			if n, err := strconv.Atoi(s[i+1:]); err == nil {
				if n > maxExponent || n < -maxExponent {
					return "", &convError{code: CodeOutOfRange, msg: fmt.Sprintf("%q: an exponent beyond %d gives more digits than a number holds", cell, maxExponent)}
				}
				s, exp = s[:i], n
			}
		}
	}
	plain, err := f.Normalize(s)
	if err != nil {
		if o.Format == nil {
			return "", &convError{code: CodeNotANumber, msg: err.Error(), hints: HintsOf(err)}
		}
		return "", &convError{code: CodeNotANumber, msg: fmt.Sprintf("%q is not a number as this column writes them (%s), which its schema declares (decimalChar, groupChar)", cell, f.Describe())}
	}
	if exp != 0 {
		plain = shiftPoint(plain, exp)
	}
	return plain, nil
}

// maxExponent bounds an exponent: a Decimal has 18 digits, and a larger
// one would only spell out zeros.
const maxExponent = 40

// shiftPoint moves a plain number's decimal point exp places to the right
// (left when negative): 1.5 and 3 is 1500.
func shiftPoint(plain string, exp int) string {
	sign := ""
	if plain != "" && (plain[0] == '-' || plain[0] == '+') {
		sign, plain = plain[:1], plain[1:]
	}
	whole, frac, _ := strings.Cut(plain, ".")
	digits := whole + frac
	pos := len(whole) + exp
	switch {
	case pos <= 0:
		return sign + "0." + strings.Repeat("0", -pos) + digits
	case pos >= len(digits):
		return sign + digits + strings.Repeat("0", pos-len(digits))
	}
	return sign + digits[:pos] + "." + digits[pos:]
}

// magnitudes are words after a number that multiply it: dropping them, as
// bareNumber: false would, stores a wrong amount.
var magnitudes = []string{"k", "K", "M", "B", "bn", "mn", "mio", "mrd", "tsd", "thousand", "thousands", "million", "millions", "billion", "billions"}

// stripNumber drops the text before and after a number (a currency, a
// percent sign): from the first digit (with a sign or decimal separator
// right before it) to the last. Text that changes the number's value is
// an error.
func stripNumber(s string, dec rune) (string, error) {
	first := strings.IndexFunc(s, isDigit)
	if first < 0 {
		return "", fmt.Errorf("%q is not a number: it has no digit", s)
	}
	last := strings.LastIndexFunc(s, isDigit) + 1
	start := first
	if r, n := utf8.DecodeLastRuneInString(s[:start]); r == dec {
		start -= n
	}
	if start > 0 && (s[start-1] == '-' || s[start-1] == '+') {
		start--
	}
	prefix, suffix := s[:start], s[last:]
	if strings.ContainsAny(prefix+suffix, "-−–()") {
		return "", fmt.Errorf("%q is not a number: the text around it (%q) may change its sign; write the sign right before the digits", s, strings.TrimSpace(prefix+" "+suffix))
	}
	word := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(suffix), "."))
	if slices.Contains(magnitudes, word) || (len(word) > 1 && slices.Contains(magnitudes, strings.ToLower(word))) {
		return "", fmt.Errorf("%q is not a number: %q would multiply it; write the number in full", s, word)
	}
	return s[start:last], nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }
