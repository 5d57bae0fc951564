package batchtype

import (
	"errors"
	"fmt"
	"time"
)

// RetentionPolicy is how long a tenant keeps its rows' values (the cells as
// read) once a batch has ended, for one kind or, with Kind "", for every
// kind without a policy of its own. Outcomes, errors and counts are kept
// whatever the policy.
type RetentionPolicy struct {
	TenantID string
	Kind     string
	// ValuesDays is how many days after a batch finished or was cancelled
	// its values are dropped.
	ValuesDays int
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Purge is one batch whose values were dropped, or with a dry run would be.
type Purge struct {
	BatchID  int64
	TenantID string
	Kind     string
	// Rows is how many rows lost their values (with a dry run: would).
	Rows int64
	// At is when the values were dropped; zero for a dry run.
	At time.Time
	// By is "policy" or "command".
	By string
	// Already says the batch's values had been dropped before, at At, by
	// By: nothing was done (a purge is idempotent).
	Already bool
	// EndedAt is when the batch finished or was cancelled.
	EndedAt time.Time
}

// Who drops values: PurgedByPolicy is the service's sweep of the
// retention policies, PurgedByCommand a purge asked for by name or age.
const (
	PurgedByPolicy  = "policy"
	PurgedByCommand = "command"
)

// ValuesPurgedError is returned by whatever needs a purged batch's values
// (a re-run, a retry, an edit, the error report): it names the batch and
// when and how its values were dropped. It matches ErrValuesPurged.
type ValuesPurgedError struct {
	BatchID int64
	At      time.Time
	By      string
	// What is what needed the values ("re-run", "error report").
	What string
}

func (e *ValuesPurgedError) Error() string {
	what := e.What
	if what == "" {
		what = "this"
	}
	return fmt.Sprintf("batch %d: %s needs the rows' values, which were purged on %s by %s: %v",
		e.BatchID, what, e.At.UTC().Format("2006-01-02 15:04:05 UTC"), e.By, ErrValuesPurged)
}

// Unwrap makes the error match ErrValuesPurged.
func (e *ValuesPurgedError) Unwrap() error { return ErrValuesPurged }

// ErrValuesPurged: the batch's row values were dropped by retention; see
// ValuesPurgedError for which batch and when.
var ErrValuesPurged = errors.New("row values purged")

// PurgedError returns the error for what needs b's values, or nil when
// they are kept.
func PurgedError(b *Batch, what string) error {
	if b == nil || b.ValuesPurgedAt == nil {
		return nil
	}
	return &ValuesPurgedError{BatchID: b.ID, At: *b.ValuesPurgedAt, By: b.ValuesPurgedBy, What: what}
}
