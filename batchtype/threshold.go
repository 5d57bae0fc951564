package batchtype

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
	// Count is the most rows allowed; used when Percent is 0. -1 allows
	// none.
	Count int64
	// Percent is the most rows allowed as a share of all rows, above 0
	// and at most 100.
	Percent float64
}

// IsZero reports whether t bounds nothing.
func (t Threshold) IsZero() bool { return t.Count == 0 && t.Percent == 0 }

// errBadThreshold is wrapped by ParseThreshold's errors.
var errBadThreshold = errors.New("bad bound")

// ParseThreshold reads "N" (a count) or "P%" (a percentage). "" and
// "none" are no bound; "0" allows none.
func ParseThreshold(s string) (Threshold, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return Threshold{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 {
			return Threshold{}, fmt.Errorf("%w %q: want a count (10), a percentage above 0 and at most 100 (2.5%%) or none", errBadThreshold, s)
		}
		return Threshold{Percent: f}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Threshold{}, fmt.Errorf("%w %q: want a count (10), a percentage (2.5%%) or none", errBadThreshold, s)
	}
	if n == 0 {
		return Threshold{Count: -1}, nil // none allowed
	}
	return Threshold{Count: n}, nil
}

// String writes t as ParseThreshold reads it; "" for no bound.
func (t Threshold) String() string {
	switch {
	case t.IsZero():
		return ""
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

// FailureBound is what Batch.MaxFailed bounds: the failures are the
// batch's failed and dead rows (unknown rows may have succeeded, and wait
// for reconciliation), out of its rows to work, every row neither invalid
// nor skipped by a reviewer. A percentage is of those, as Step Functions'
// tolerated failure percentage is of all items, so that the first failures
// of a big batch do not pass a 10% bound on their own.
func FailureBound(c rows.Counts) (failures, worked int64) {
	return c[rows.StateFailed] + c[rows.StateDead], c.Total() - c[rows.StateInvalid] - c[rows.StateSkipped]
}

// FailuresExceeded reports whether a batch's failures pass its MaxFailed.
func (b *Batch) FailuresExceeded() bool {
	f, n := FailureBound(b.Counts)
	return b.MaxFailed.Exceeded(f, n)
}
