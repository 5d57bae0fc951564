package rows

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

type convError struct {
	code  Code
	msg   string
	hints []Hint
}

func (e *convError) Error() string { return e.msg }

// Hints are the options that would read the cell.
func (e *convError) Hints() []Hint { return e.hints }

// Enum is implemented by a string type whose values are a fixed list:
//
//	type Tier string
//	func (Tier) Enum() []string { return []string{"free", "pro", "enterprise"} }
//
// A cell binds when it equals one of them ignoring case and surrounding
// spaces, and the field holds the value as Enum spells it; anything else is
// a oneof error listing them. Enum is called once, when the Binder is made.
type Enum interface {
	Enum() []string
}

// converter returns the function that parses a trimmed cell into a value of
// type t. An empty cell leaves the zero value (nil for pointers), so that
// "required" is the declarative phase's decision, not the binder's.
func converter(t reflect.Type, o *fieldOpts) (convertFunc, error) {
	switch {
	case t.Kind() == reflect.Pointer:
		return pointerConverter(t, o)
	case t == timeType:
		return timeConverter(o), nil
	case t == decimalType:
		return decimalConverter(o.number), nil
	case t.Kind() == reflect.String && t.Implements(enumType):
		return enumConverter(t)
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return textConverter, nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(s string, v reflect.Value, _ *cellConv) error { v.SetString(s); return nil }, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return numberConverter(t, o.number), nil
	case reflect.Bool:
		if o.exactBool {
			return exactBoolConverter(o.trueWords, o.falseWord), nil
		}
		return boolConverter(o), nil
	}
	return nil, fmt.Errorf("unsupported field type %s", t)
}

// valueKind classifies a field type for ColumnKind.
func valueKind(t reflect.Type) string {
	if elem, ok := OptionalElem(t); ok {
		t = elem
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return KindDate
	case t == decimalType:
		return KindNumber
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return KindNumber
	}
	return KindText
}

// pointerConverter converts into the pointed-to type; an empty cell is a
// nil pointer, so that a missing value and a zero one stay apart.
func pointerConverter(t reflect.Type, o *fieldOpts) (convertFunc, error) {
	inner, err := converter(t.Elem(), o)
	if err != nil {
		return nil, err
	}
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			v.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := inner(s, p.Elem(), cc); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}, nil
}

// optionalConverter fills an Optional: an empty cell leaves it unset.
func optionalConverter(inner convertFunc) convertFunc {
	return func(s string, v reflect.Value, cc *cellConv) error {
		v.SetZero()
		if s == "" {
			return nil
		}
		if err := inner(s, v.Field(0), cc); err != nil {
			return err
		}
		v.Field(1).SetBool(true)
		return nil
	}
}

// casedConverter changes a cell's case before the field's converter sees it.
func casedConverter(inner convertFunc, upper bool) convertFunc {
	return func(s string, v reflect.Value, cc *cellConv) error {
		if upper {
			s = strings.ToUpper(s)
		} else {
			s = strings.ToLower(s)
		}
		return inner(s, v, cc)
	}
}

// maxPlausibleSerial is the largest number read as an Excel serial date:
// 99999 is 2173-10-13. A six-digit number in a date column (250131) is a
// compact date or a mistake, not the year 2584.
const maxPlausibleSerial = 99999

// timeConverter tries the field's layouts in order, then the file's
// declared date format (DateFormat: undeclared, a compact date of six or
// eight digits is refused), then the numeric and month-name forms in the
// file's day/month order, and then, unless the excel tag is "off", a plain
// number as an Excel serial date.
func timeConverter(o *fieldOpts) convertFunc {
	if o.strptime != "" {
		return patternConverter(o.strptime, o.layouts)
	}
	layouts, excel, option := o.layouts, o.excel, o.orderOption
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			return nil
		}
		for _, l := range layouts {
			if tm, err := time.Parse(l, s); err == nil {
				v.Set(reflect.ValueOf(tm))
				return nil
			}
		}
		if tm, done, err := cc.date.read(s, excel, cc.number); done {
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		if tm, ok, err := parseDate(s, cc.order); ok {
			if err != nil {
				msg := err.Error()
				if amb := (*errAmbiguousDate)(nil); option != "" && errors.As(err, &amb) {
					msg += fmt.Sprintf(", or declare %s: dmy or mdy", option)
				}
				return &convError{code: CodeBadDate, msg: msg, hints: HintsOf(err)}
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		if p := serialPoint(s, cc.number); excel != excelOff && looksSerial(p) {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return &convError{code: CodeBadDate, msg: fmt.Sprintf("%q: is not an Excel serial date", s)}
			}
			if f > maxPlausibleSerial {
				msg := fmt.Sprintf("%q is not a date: as an Excel serial date it would be past the year 2173", s)
				if tm, err := ExcelSerialTime(f, excel == excel1904); err == nil {
					msg = fmt.Sprintf("%q is not a date: as an Excel serial date it would be in the year %d", s, tm.Year())
				}
				return &convError{code: CodeBadDate, msg: msg + "; a compact date such as YYMMDD needs its layout declared"}
			}
			tm, err := ExcelSerialTime(f, excel == excel1904)
			if err != nil {
				return &convError{code: CodeBadDate, msg: fmt.Sprintf("%q: %v", s, err)}
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		return &convError{code: CodeBadDate, msg: fmt.Sprintf("%q is not a date in the form %s, DD/MM/YYYY or MM/DD/YYYY, or 31-Dec-2025", s, humanLayouts(layouts))}
	}
}

// patternConverter reads a date in the column's declared strptime
// pattern, or else in one of layouts (the ISO forms a spreadsheet's date
// cells are read as); nothing else, so the declared order of day and
// month is never read the other way round.
func patternConverter(pattern string, layouts []string) convertFunc {
	return func(s string, v reflect.Value, _ *cellConv) error {
		if s == "" {
			return nil
		}
		tm, err := Strptime(pattern, s)
		if err == nil {
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		for _, l := range layouts {
			if tm, lerr := time.Parse(l, s); lerr == nil {
				v.Set(reflect.ValueOf(tm))
				return nil
			}
		}
		return &convError{code: CodeBadDate, msg: err.Error()}
	}
}

// plainNumber rewrites a cell in the column's number format (its own, or
// else the file's) into the plain form the parsers read, or explains why
// it is not a number there.
func (cc *cellConv) plainNumber(s string, no *NumberOptions) (string, error) {
	if no != nil {
		return no.plain(s, cc.number)
	}
	if cc.commas && cc.number.decimal() == '.' && NumberClueOf(s) == ClueAmbiguous && strings.Contains(s, ".") {
		return "", &convError{code: CodeNotANumber, msg: fmt.Sprintf("%q is ambiguous: other values in this column are written with a decimal comma, where it would be %s; import with a decimal comma (or a locale that writes one) to say how the file writes numbers", s, strings.ReplaceAll(s, ".", "")),
			hints: []Hint{{Option: OptionDecimalComma}, {Option: OptionLocale, Values: []string{"de", "fr"}}}}
	}
	plain, err := cc.number.Normalize(s)
	if err != nil {
		return "", &convError{code: CodeNotANumber, msg: err.Error(), hints: HintsOf(err)}
	}
	return plain, nil
}

// numeric reads a number cell: an empty one is left alone, any other is
// rewritten in the plain form (plainNumber) and handed to parse with the
// cell as written, for messages.
func numeric(no *NumberOptions, parse func(cell, plain string, v reflect.Value, cc *cellConv) error) convertFunc {
	return func(s string, v reflect.Value, cc *cellConv) error {
		if s == "" {
			return nil
		}
		plain, err := cc.plainNumber(s, no)
		if err != nil {
			return err
		}
		return parse(s, plain, v, cc)
	}
}

func decimalConverter(no *NumberOptions) convertFunc {
	return numeric(no, func(s, plain string, v reflect.Value, cc *cellConv) error {
		d, err := ParseDecimal(plain)
		switch {
		case errors.Is(err, errDecimalRange):
			return &convError{code: CodeOutOfRange, msg: fmt.Sprintf("%q has more than %d digits", s, maxDecimalDigits)}
		case err != nil:
			return &convError{code: CodeNotANumber, msg: fmt.Sprintf("%q is not a number (write %s)", s, no.format(cc.number).Describe())}
		}
		v.Set(reflect.ValueOf(d))
		return nil
	})
}

// enumConverter matches a cell against the values t's Enum method lists,
// ignoring case, and stores the value as Enum spells it.
func enumConverter(t reflect.Type) (convertFunc, error) {
	allowed := reflect.Zero(t).Interface().(Enum).Enum()
	if len(allowed) == 0 {
		return nil, fmt.Errorf("%s.Enum() lists no values", t)
	}
	list := strings.Join(allowed, ", ")
	return func(s string, v reflect.Value, _ *cellConv) error {
		if s == "" {
			return nil
		}
		for _, a := range allowed {
			if strings.EqualFold(a, s) {
				v.SetString(a)
				return nil
			}
		}
		return &convError{code: CodeOneOf, msg: fmt.Sprintf("%q must be one of %s", s, list)}
	}, nil
}

func textConverter(s string, v reflect.Value, _ *cellConv) error {
	if s == "" {
		return nil
	}
	if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		return &convError{code: CodeInvalid, msg: fmt.Sprintf("%q is not valid: %v", s, err)}
	}
	return nil
}

// numberConverter parses ints, uints and floats of t's size.
func numberConverter(t reflect.Type, no *NumberOptions) convertFunc {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return numeric(no, func(s, plain string, v reflect.Value, _ *cellConv) error {
			n, err := strconv.ParseInt(plain, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetInt(n)
			return nil
		})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return numeric(no, func(s, plain string, v reflect.Value, _ *cellConv) error {
			n, err := strconv.ParseUint(plain, 10, t.Bits())
			if err != nil {
				return numErr(s, err)
			}
			v.SetUint(n)
			return nil
		})
	}
	return numeric(no, func(s, plain string, v reflect.Value, _ *cellConv) error {
		n, err := strconv.ParseFloat(plain, t.Bits())
		if err != nil {
			return numErr(s, err)
		}
		// ParseFloat accepts "NaN" and "Inf"; no spreadsheet user means
		// them as amounts, and "Inf" would pass a range check like gte=0.
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return &convError{code: CodeNotANumber, msg: fmt.Sprintf("%q is not a number", s)}
		}
		v.SetFloat(n)
		return nil
	})
}

// boolConverter reads the usual words for true and false, and those of
// the field's bool tag.
func boolConverter(o *fieldOpts) convertFunc {
	trueWords, falseWords := o.trueWords, o.falseWord
	words := "yes/no, true/false or 1/0"
	// A tag may name words for true only, or for false only.
	if extra := slices.Concat(trueWords, falseWords); len(extra) > 0 {
		words = strings.Join(extra, ", ") + ", " + words
	}
	return func(s string, v reflect.Value, _ *cellConv) error {
		if s == "" {
			return nil
		}
		w := strings.ToLower(s)
		switch {
		case w == "true" || w == "yes" || w == "y" || w == "1" || slices.Contains(trueWords, w):
			v.SetBool(true)
		case w == "false" || w == "no" || w == "n" || w == "0" || slices.Contains(falseWords, w):
			v.SetBool(false)
		default:
			return &convError{code: CodeNotABool, msg: fmt.Sprintf("%q is not %s", s, words)}
		}
		return nil
	}
}

// exactBoolConverter reads the declared words only, exactly as written:
// a Table Schema's trueValues and falseValues ("True" is true and "YES" is
// nothing unless a list has it).
func exactBoolConverter(trueWords, falseWords []string) convertFunc {
	words := fmt.Sprintf("one of %s (true) or %s (false)", quoteWords(trueWords), quoteWords(falseWords))
	return func(s string, v reflect.Value, _ *cellConv) error {
		switch {
		case s == "":
		case slices.Contains(trueWords, s):
			v.SetBool(true)
		case slices.Contains(falseWords, s):
			v.SetBool(false)
		default:
			return &convError{code: CodeNotABool, msg: fmt.Sprintf("%q is not %s", s, words)}
		}
		return nil
	}
}

func quoteWords(ws []string) string {
	if len(ws) == 0 {
		return "no word"
	}
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q, ", ")
}

// looksSerial reports whether s is a plain non-negative number, the way a
// spreadsheet's date cell reads when exported without formatting: 45292 or
// 45292.5.
func looksSerial(s string) bool {
	digits, point := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point && digits > 0:
			point = true
		default:
			return false
		}
	}
	return digits > 0 && digits <= 12
}

func numErr(s string, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return &convError{code: CodeOutOfRange, msg: fmt.Sprintf("%q is out of range", s)}
	}
	return &convError{code: CodeNotANumber, msg: fmt.Sprintf("%q is not a number", s)}
}

// humanLayouts renders Go time layouts the way a spreadsheet user reads
// them: "2006-01-02" becomes "YYYY-MM-DD".
func humanLayouts(layouts []string) string {
	r := strings.NewReplacer("2006", "YYYY", "01", "MM", "02", "DD", "15", "hh", "04", "mm", "05", "ss", "Z07:00", "±hh:mm")
	out := make([]string, len(layouts))
	for i, l := range layouts {
		out[i] = r.Replace(l)
	}
	return strings.Join(out, " or ")
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

func formatValue(v reflect.Value, o *fieldOpts) (string, error) {
	if of, ok := v.Interface().(OptionalField); ok {
		val, set := of.OptionalValue()
		if !set {
			return "", nil
		}
		v = reflect.ValueOf(val)
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", nil
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return "", nil
		}
		return t.Format(o.layouts[0]), nil
	case v.Type() == decimalType:
		return v.Interface().(Decimal).String(), nil
	case v.Kind() != reflect.String && v.Type().Implements(textMarshalerType):
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		return string(b), err
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, v.Type().Bits()), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	}
	return "", fmt.Errorf("cannot format %s", v.Type())
}
