package rows

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number for money and quantities: a 64-bit
// coefficient and a count of decimal places, so "0.10" is ten hundredths,
// not the nearest binary fraction, and "12.50" keeps its two places when it
// is written back.
//
// It holds up to 18 significant digits (amounts up to 10^16 with two
// places), which covers money in any currency; a longer number is
// out_of_range rather than rounded. It is small and allocation-free because
// binding runs on every cell of every row; nothing in the engine does
// arithmetic on amounts, so it offers comparison, not arithmetic. The zero
// value is 0.
//
// Decimal binds from a cell ("-1234.50", "+3", ".5"; no exponent, no
// thousands separators: "1,50" is not a number rather than a guess), and
// implements encoding.TextMarshaler, encoding.TextUnmarshaler,
// driver.Valuer (as text, which PostgreSQL numeric and SQLite TEXT store
// exactly) and sql.Scanner.
type Decimal struct {
	coef  int64
	scale int32
}

// maxDecimalDigits is the most significant digits a Decimal holds: every
// 18-digit number fits an int64.
const maxDecimalDigits = 18

var (
	errDecimalSyntax = errors.New("not a decimal number")
	errDecimalRange  = errors.New("too many digits")
)

// NewDecimal returns coef × 10^-scale: NewDecimal(1250, 2) is 12.50.
// scale must be between 0 and 18.
func NewDecimal(coef int64, scale int) Decimal {
	if scale < 0 || scale > maxDecimalDigits {
		panic(fmt.Sprintf("rows: NewDecimal scale %d out of 0..18", scale))
	}
	return Decimal{coef: coef, scale: int32(scale)}
}

// ParseDecimal parses a plain decimal number: an optional sign, digits and
// an optional decimal point with more digits. Leading zeros do not count
// towards the 18-digit limit; trailing zeros after the point do (they are
// kept).
func ParseDecimal(s string) (Decimal, error) {
	var d Decimal
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var (
		digits, sig int
		point       bool
		coef        uint64
	)
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' && !point:
			point = true
		case c >= '0' && c <= '9':
			digits++
			if point {
				d.scale++
			}
			if sig == 0 && c == '0' {
				continue // a leading zero
			}
			sig++
			if sig > maxDecimalDigits {
				return Decimal{}, errDecimalRange
			}
			coef = coef*10 + uint64(c-'0')
		default:
			return Decimal{}, errDecimalSyntax
		}
	}
	if digits == 0 {
		return Decimal{}, errDecimalSyntax
	}
	if d.scale > maxDecimalDigits {
		return Decimal{}, errDecimalRange
	}
	d.coef = int64(coef)
	if neg {
		d.coef = -d.coef
	}
	return d, nil
}

// String formats d with its own number of decimal places: "12.50", "-0.5",
// "3".
func (d Decimal) String() string {
	return string(d.appendText(make([]byte, 0, 24)))
}

func (d Decimal) appendText(b []byte) []byte {
	coef := d.coef
	if coef < 0 {
		b = append(b, '-')
	}
	var digits [20]byte
	u := uint64(coef)
	if coef < 0 {
		u = uint64(-coef)
	}
	ds := strconv.AppendUint(digits[:0], u, 10)
	scale := int(d.scale)
	if scale == 0 {
		return append(b, ds...)
	}
	if len(ds) <= scale {
		b = append(b, '0', '.')
		for range scale - len(ds) {
			b = append(b, '0')
		}
		return append(b, ds...)
	}
	b = append(b, ds[:len(ds)-scale]...)
	b = append(b, '.')
	return append(b, ds[len(ds)-scale:]...)
}

// Scale returns the number of decimal places d was written with.
func (d Decimal) Scale() int { return int(d.scale) }

// Sign returns -1, 0 or +1.
func (d Decimal) Sign() int {
	switch {
	case d.coef < 0:
		return -1
	case d.coef > 0:
		return 1
	}
	return 0
}

// IsZero reports whether d is zero, whatever its scale.
func (d Decimal) IsZero() bool { return d.coef == 0 }

// Cmp compares d and e by value: -1 if d < e, 0 if equal ("1.50" equals
// "1.5"), +1 if d > e.
func (d Decimal) Cmp(e Decimal) int {
	if d.scale == e.scale {
		switch {
		case d.coef < e.coef:
			return -1
		case d.coef > e.coef:
			return 1
		}
		return 0
	}
	// Aligning the scales may overflow 64 bits; this path is rare.
	x, y := big.NewInt(d.coef), big.NewInt(e.coef)
	if d.scale < e.scale {
		x.Mul(x, pow10(e.scale-d.scale))
	} else {
		y.Mul(y, pow10(d.scale-e.scale))
	}
	return x.Cmp(y)
}

func pow10(n int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// Float64 returns the nearest float64, for checks that need no exactness
// (the declarative phase's gte=0).
func (d Decimal) Float64() float64 {
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

// MarshalText formats d as String does.
func (d Decimal) MarshalText() ([]byte, error) { return d.appendText(nil), nil }

// UnmarshalText parses text as ParseDecimal does.
func (d *Decimal) UnmarshalText(text []byte) error {
	v, err := ParseDecimal(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Value stores d as text, which databases keep exactly.
func (d Decimal) Value() (driver.Value, error) { return d.String(), nil }

// Scan reads a number stored as text, bytes or an integer. A float is
// accepted through its shortest decimal form.
func (d *Decimal) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case int64:
		*d = Decimal{coef: v}
		return nil
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		*d = Decimal{}
		return nil
	default:
		return fmt.Errorf("scan %T into rows.Decimal", src)
	}
	v, err := ParseDecimal(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("scan %q into rows.Decimal: %w", s, err)
	}
	*d = v
	return nil
}
