// Package storesql is the batch store written once for both engines: every
// statement (Store, in store.go) with $N placeholders and a few dialect
// tokens (Dialect), over a small Querier that each driver adapts, plus the
// fragments and encodings the rules are made of: which columns hold a
// chunk's counts, how they are aggregated from rows, which states are open.
// store/postgres and store/sqlite supply only what is their own.
//
// ARCHITECTURE.md at the repository root ("The store seam") describes it.
package storesql

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// OpenStates is the SQL list of states that still have work.
const OpenStates = "('valid','processing','retrying')"

// ClaimableStates are the states a claim moves to processing when due.
const ClaimableStates = OpenStates

// CountColumns is "n_pending, n_valid, ..." in rows.States order.
func CountColumns() string {
	cols := make([]string, len(rows.States))
	for i, s := range rows.States {
		cols[i] = "n_" + string(s)
	}
	return strings.Join(cols, ", ")
}

// CountAggregates is one count per state over batch_rows, in rows.States
// order: the single aggregate every counter is overwritten from.
func CountAggregates() string {
	parts := make([]string, len(rows.States))
	for i, s := range rows.States {
		parts[i] = fmt.Sprintf("count(*) FILTER (WHERE state = '%s')", s)
	}
	return strings.Join(parts, ", ")
}

// groupSize is how many consecutive chunks a count group holds
// (migration 0009): a flush sums at most this many chunks and a status
// read one group per groupSize chunks.
const groupSize = 100

var groupSizeSQL = fmt.Sprint(groupSize)

// excludedCounts sets every count column from an upsert's excluded row.
func excludedCounts() string {
	parts := make([]string, len(rows.States))
	for i, s := range rows.States {
		parts[i] = fmt.Sprintf("n_%s = excluded.n_%s", s, s)
	}
	return strings.Join(parts, ", ")
}

// SumColumns sums the chunk counts into batch totals, in rows.States order.
func SumColumns() string {
	parts := make([]string, len(rows.States))
	for i, s := range rows.States {
		parts[i] = fmt.Sprintf("COALESCE(sum(n_%s), 0)", s)
	}
	return strings.Join(parts, ", ")
}

// stateSums is one sum per state of the counts in column n of rows
// grouped by state, in rows.States order: CountAggregates over groups.
func stateSums(n string) string {
	parts := make([]string, len(rows.States))
	for i, s := range rows.States {
		parts[i] = fmt.Sprintf("COALESCE(CAST(sum(%s) FILTER (WHERE state = '%s') AS bigint), 0)", n, s)
	}
	return strings.Join(parts, ", ")
}

// CountDests returns scan destinations for the columns of CountColumns and a
// function that turns them into Counts once scanned.
func CountDests() ([]any, func() rows.Counts) {
	vals := make([]int64, len(rows.States))
	dests := make([]any, len(vals))
	for i := range vals {
		dests[i] = &vals[i]
	}
	return dests, func() rows.Counts {
		c := rows.Counts{}
		for i, s := range rows.States {
			if vals[i] != 0 {
				c[s] = vals[i]
			}
		}
		return c
	}
}

// EncodeValues is the stored form of a record's cells.
func EncodeValues(v []string) ([]byte, error) {
	if v == nil {
		v = []string{}
	}
	return json.Marshal(v)
}

// DecodeValues reverses EncodeValues. A payload of plain strings (no
// escape, no control character, valid UTF-8: nearly every row of a real
// file) is read by a scanner of its own, which gives the same strings as
// encoding/json in a fifth of the time (0.55 µs against 2.6 µs for a
// customers row, BenchmarkDecodeValues); any other goes to
// encoding/json. Every claim and page of rows decodes its rows' payloads
// (23% of a SQLite claim's time).
func DecodeValues(b []byte) ([]string, error) {
	if v, ok := decodePlain(b); ok {
		return v, nil
	}
	var v []string
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode row payload: %w", err)
	}
	return v, nil
}

// decodePlain reads a JSON array of strings none of which needs decoding,
// as encoding/json and PostgreSQL's jsonb write them (jsonb with a space
// after each comma); ok is false for anything else.
func decodePlain(b []byte) (v []string, ok bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return nil, false
	}
	v = make([]string, 0, 8)
	if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
		return v, skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return nil, false
		}
		j := i + 1
		for ; j < len(b) && b[j] != '"'; j++ {
			if b[j] == '\\' || b[j] < 0x20 {
				return nil, false
			}
		}
		if j == len(b) || !utf8.Valid(b[i+1:j]) {
			return nil, false
		}
		v = append(v, string(b[i+1:j]))
		switch i = skipSpace(b, j+1); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return v, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// EncodeErrors is the stored form of a row's errors; nil when there are
// none, so the column stays NULL.
func EncodeErrors(errs []rows.FieldError) ([]byte, error) {
	if len(errs) == 0 {
		return nil, nil
	}
	return json.Marshal(errs)
}

// DecodeErrors reverses EncodeErrors.
func DecodeErrors(b []byte) ([]rows.FieldError, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var errs []rows.FieldError
	if err := json.Unmarshal(b, &errs); err != nil {
		return nil, fmt.Errorf("decode row errors: %w", err)
	}
	return errs, nil
}

// BatchOptions is the JSON of batches.options: what a batch keeps that has
// no column of its own.
type BatchOptions struct {
	Warnings    storedWarnings    `json:"warnings,omitempty"`
	ErrorCounts []rows.ErrorCount `json:"error_counts,omitempty"`
	Conventions rows.Conventions  `json:"conventions,omitzero"`
	Width       int               `json:"width,omitempty"`
	Recalc      map[string]string `json:"recalc,omitzero"`
	KindVersion int64             `json:"kind_version,omitempty"`
	// KindDefinition is a one-off kind's definition (Batch.KindDefinition).
	KindDefinition string `json:"kind_definition,omitempty"`
	// OptionsDigest is the import's (Batch.OptionsDigest).
	OptionsDigest string `json:"options_digest,omitempty"`
	// Export marks an export's batch (Batch.Export).
	Export bool `json:"export,omitempty"`
}

// storedWarnings are a batch's warnings in batches.options: a warning
// without hints is its message, a JSON string, as every warning was
// stored before warnings had hints; one with hints is an object.
type storedWarnings []batchtype.Warning

type storedWarning struct {
	Message string      `json:"message"`
	Hints   []rows.Hint `json:"hints,omitempty"`
}

// MarshalJSON writes each warning as a string, or an object when it has
// hints.
func (ws storedWarnings) MarshalJSON() ([]byte, error) {
	out := make([]any, len(ws))
	for i, w := range ws {
		if len(w.Hints) == 0 {
			out[i] = w.Message
		} else {
			out[i] = storedWarning{Message: w.Message, Hints: w.Hints}
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads strings and objects alike.
func (ws *storedWarnings) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(storedWarnings, len(raw))
	for i, r := range raw {
		if len(r) > 0 && r[0] == '"' {
			if err := json.Unmarshal(r, &out[i].Message); err != nil {
				return err
			}
			continue
		}
		var w storedWarning
		if err := json.Unmarshal(r, &w); err != nil {
			return fmt.Errorf("warning %d: %w", i, err)
		}
		out[i] = batchtype.Warning{Message: w.Message, Hints: w.Hints}
	}
	*ws = out
	return nil
}
