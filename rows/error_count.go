package rows

import (
	"cmp"
	"slices"
)

// ErrorCount is how many field errors of one code one column had: a line
// of the summary that tells a user what is wrong with a file at a glance.
type ErrorCount struct {
	// Column is the column as the file spells it; "" for errors of the
	// whole row.
	Column string `json:"column,omitempty"`
	Code   Code   `json:"code"`
	Count  int64  `json:"count"`
}

// ErrorTally counts field errors by column and code. The zero value is
// ready to use.
type ErrorTally struct {
	n     map[ErrorCount]int64
	total int64
}

// Add counts errs.
func (t *ErrorTally) Add(errs []FieldError) {
	if len(errs) == 0 {
		return
	}
	if t.n == nil {
		t.n = map[ErrorCount]int64{}
	}
	for _, e := range errs {
		t.n[ErrorCount{Column: e.Column, Code: e.Code}]++
	}
	t.total += int64(len(errs))
}

// AddCount adds c.Count errors of c's column and code.
func (t *ErrorTally) AddCount(c ErrorCount) {
	if c.Count == 0 {
		return
	}
	if t.n == nil {
		t.n = map[ErrorCount]int64{}
	}
	t.n[ErrorCount{Column: c.Column, Code: c.Code}] += c.Count
	t.total += c.Count
}

// Total returns the number of errors counted.
func (t *ErrorTally) Total() int64 { return t.total }

// Counts returns the counts, most frequent first (then by column and
// code, so the order is stable); nil when nothing was counted.
func (t *ErrorTally) Counts() []ErrorCount {
	if len(t.n) == 0 {
		return nil
	}
	out := make([]ErrorCount, 0, len(t.n))
	for k, n := range t.n {
		k.Count = n
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Code, b.Code))
	})
	return out
}
