package batch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/rows"
)

// Threshold bounds how many of a batch's rows may be bad: a count, or a
// percentage of its rows. The zero value is no bound.
type Threshold struct {
	// Count is the most rows allowed; used when Percent is 0.
	Count int64
	// Percent is the most rows allowed as a share of all rows, above 0
	// and at most 100.
	Percent float64
}

// IsZero reports whether t bounds nothing.
func (t Threshold) IsZero() bool { return t.Count == 0 && t.Percent == 0 }

// ParseThreshold reads "N" (a count) or "P%" (a percentage). "" is no
// bound; "0" allows none.
func ParseThreshold(s string) (Threshold, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Threshold{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 {
			return Threshold{}, fmt.Errorf("%w: %q: want a count (10) or a percentage above 0 and at most 100 (2.5%%)", ErrBadParams, s)
		}
		return Threshold{Percent: f}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Threshold{}, fmt.Errorf("%w: %q: want a count (10) or a percentage (2.5%%)", ErrBadParams, s)
	}
	if n == 0 {
		return Threshold{Count: -1}, nil // none allowed
	}
	return Threshold{Count: n}, nil
}

// String writes t as ParseThreshold reads it.
func (t Threshold) String() string {
	switch {
	case t.Percent > 0:
		return strconv.FormatFloat(t.Percent, 'f', -1, 64) + "%"
	case t.Count < 0:
		return "0"
	}
	return strconv.FormatInt(t.Count, 10)
}

// Exceeded reports whether bad of total rows passes t.
func (t Threshold) Exceeded(bad, total int64) bool {
	switch {
	case t.IsZero():
		return false
	case t.Percent > 0:
		return total > 0 && float64(bad)*100 > t.Percent*float64(total)
	case t.Count < 0:
		return bad > 0
	}
	return bad > t.Count
}

// ErrTooManyInvalid is wrapped by the error of an import whose invalid
// rows pass ImportParams.MaxInvalid: the file is rejected whole, nothing
// written.
var ErrTooManyInvalid = errors.New("too many invalid rows")

// tooManyInvalid is the rejection of a file whose invalid rows pass max.
func tooManyInvalid(name string, invalid, total int64, max Threshold) error {
	return &rows.FileError{File: name, Err: rows.WithHints(fmt.Errorf("%w: %d of %d rows are invalid, more than the %s allowed",
		ErrTooManyInvalid, invalid, total, max), rows.Hint{Option: OptionMaxInvalid, Values: []string{strconv.FormatInt(invalid, 10)}})}
}

// OptionMaxInvalid is the import option that bounds a file's invalid rows
// (batchctl --max-invalid, the API's max_invalid).
const OptionMaxInvalid rows.Option = "max_invalid"
