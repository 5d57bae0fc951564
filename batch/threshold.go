package batch

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// Threshold bounds how many of a batch's rows may be bad: a count, or a
// percentage of its rows. The zero value is no bound.
type Threshold = batchtype.Threshold

// ParseThreshold reads "N" (a count) or "P%" (a percentage). "" and
// "none" are no bound; "0" allows none. Its errors wrap ErrBadParams.
func ParseThreshold(s string) (Threshold, error) {
	t, err := batchtype.ParseThreshold(s)
	if err != nil {
		return Threshold{}, fmt.Errorf("%w: %w", ErrBadParams, err)
	}
	return t, nil
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
