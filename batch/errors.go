package batch

import (
	"context"
	"errors"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

// Row error codes the engine writes for processor outcomes.
const (
	CodeProcessor rows.Code = "processor_error"
	CodeTimeout   rows.Code = "timeout"
	CodeExhausted           = rows.CodeExhausted
	// CodeUnknown is a row whose processor panicked, or answered so that
	// its effect cannot be told.
	CodeUnknown rows.Code = "outcome_unknown"
	// CodeKeyReused is a row whose effect key was claimed before with
	// another payload.
	CodeKeyReused = rows.CodeKeyReused
	// CodeKeyHeld is a row whose effect key another row holds and has not
	// finished: retried later.
	CodeKeyHeld rows.Code = "effect_key_held"
)

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a processor error as one that retrying cannot fix: the row
// becomes failed at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

type notAppliedError struct{ err error }

func (e *notAppliedError) Error() string { return e.err.Error() }
func (e *notAppliedError) Unwrap() error { return e.err }

// NotApplied marks a processor error to retry as one whose call had no
// effect: the downstream turned the request away before acting on it (a
// 429 or 503 answer), or it was never sent. It matters for a kind with
// KeyedEffects when the row's retries end, by its last attempt or by a
// cancel: an error to retry that is not marked may have had its effect (a
// call that timed out on the client's side after the downstream applied
// it), so the row is then unknown, to reconcile; when every run of its key
// failed with a NotApplied error, it is dead, or cancelled. A retry with
// the same key is safe either way. Permanent errors need no mark.
func NotApplied(err error) error {
	if err == nil {
		return nil
	}
	return &notAppliedError{err: err}
}

// IsNotApplied reports whether err was marked with NotApplied.
func IsNotApplied(err error) bool {
	var n *notAppliedError
	return errors.As(err, &n)
}

// unknownError is a processor error after which the effect may or may
// not have happened: a panic mid-call, an answer that does not say which
// rows succeeded. The row is unknown, to be reconciled, never failed.
type unknownError struct{ err error }

func (e *unknownError) Error() string { return e.err.Error() }
func (e *unknownError) Unwrap() error { return e.err }

// classify decides a processed row's outcome from what the processor
// returned: an id is a success, and an empty id with no error is a
// malformed answer (unknown), never a success. parent is the worker's context: when it is done the row was
// interrupted by shutdown or lease loss, not by its own timeout, and has no
// outcome yet (ok is false).
func classify(parent context.Context, id string, err error, attempt, maxAttempts int) (out driver.RowOutcome, ok bool) {
	switch {
	case err == nil && id == "":
		// "Succeeded, but nothing to show for it" is not a success the
		// engine can record: the call ran, so its effect may have happened.
		return driver.RowOutcome{State: rows.StateUnknown, Error: &rows.FieldError{Code: CodeUnknown,
			Message: "the processor answered with neither a result id nor an error, a malformed answer: the effect may have happened; reconcile the row"}}, true
	case err == nil:
		return driver.RowOutcome{State: rows.StateSucceeded, ResultID: id}, true
	case IsPermanent(err):
		return driver.RowOutcome{State: rows.StateFailed, Error: &rows.FieldError{Code: CodeProcessor, Message: err.Error()}}, true
	case errors.As(err, new(*unknownError)):
		return driver.RowOutcome{State: rows.StateUnknown, Error: &rows.FieldError{Code: CodeUnknown, Message: err.Error() + ": the effect may have happened; reconcile the row"}}, true
	case parent.Err() != nil:
		return driver.RowOutcome{}, false
	case errors.Is(err, context.DeadlineExceeded):
		// The effect may have happened; only reconciliation can tell.
		return driver.RowOutcome{State: rows.StateUnknown, Error: &rows.FieldError{Code: CodeTimeout, Message: err.Error()}}, true
	case attempt >= maxAttempts:
		return driver.RowOutcome{State: rows.StateDead, Error: &rows.FieldError{Code: CodeExhausted, Message: err.Error()}}, true
	default:
		return driver.RowOutcome{State: rows.StateRetrying, Error: &rows.FieldError{Code: CodeProcessor, Message: err.Error()}}, true
	}
}
