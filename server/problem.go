package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/rows"
)

// Problem is an error response as RFC 9457 problem details
// (application/problem+json), with Rowfate's stable Code as an extension
// member: clients branch on the code, people read the detail.
type Problem struct {
	// Type is "urn:rowfate:problem:" + Code: a stable identifier.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request's path.
	Instance string `json:"instance,omitempty"`
	// Code is the stable, machine-readable reason (see ProblemCodes).
	Code string `json:"code"`
	// Errors are the field errors of a refused row (an edit).
	Errors []rows.FieldError `json:"errors,omitempty"`
	// BatchID names the batch a conflict is about (a replayed webhook, an
	// error report of another batch).
	BatchID int64 `json:"batch_id,omitempty"`
	// Hints are the import options that would settle a rejected file
	// (file_rejected): a column that looks like the kind's is mapped or
	// ignored.
	Hints []rows.Hint `json:"hints,omitempty"`
}

// ProblemTypePrefix starts every Problem's Type.
const ProblemTypePrefix = "urn:rowfate:problem:"

// ProblemCodes are the stable codes of error responses, with their title.
// A code is never renamed once published; new ones may be added.
var ProblemCodes = map[string]string{
	"bad_request":             "The request is malformed",
	"unauthorized":            "A valid bearer token is required",
	"forbidden":               "This token may not do that",
	"not_found":               "No such resource",
	"method_not_allowed":      "Method not allowed",
	"unknown_kind":            "No such kind",
	"conflict":                "The resource changed meanwhile",
	"idempotency_key_reused":  "The Idempotency-Key was used with other content or other options",
	"batch_busy":              "The batch has rows being worked or of unknown outcome",
	"row_locked":              "The row cannot be changed",
	"report_of_batch":         "The file is the error report of a batch",
	"file_rejected":           "The file was rejected",
	"file_not_kept":           "The file is not kept",
	"no_match":                "No row matches: nothing to recalculate",
	"too_large":               "The request body is too large",
	"unsupported_media_type":  "Unsupported Content-Type",
	"bad_signature":           "The webhook signature does not verify",
	"replayed":                "This webhook was received before",
	"hooks_disabled":          "Incoming webhooks are not configured",
	"destination_not_allowed": "The URL's destination is not a public address",
	"database_unreachable":    "The database does not answer",
	"unavailable":             "The service is not available",
	"internal":                "Internal error",
	"bad_batch_id":            "The batch id is not a positive integer",
	"bad_cursor":              "The cursor is not an event's seq",
	"cursor_ahead":            "The cursor is beyond the batch's newest event",
	"origin_not_allowed":      "This origin may not open the stream",
	"websocket_required":      "This endpoint streams over a websocket",
	"values_purged":           "The batch's row values were purged",
}

// problemError is an error that is already a problem.
type problemError struct{ p Problem }

func (e *problemError) Error() string { return e.p.Detail }

// problemf returns an error answered with status and code.
func problemf(status int, code, format string, args ...any) error {
	return &problemError{Problem{Status: status, Code: code, Detail: fmt.Sprintf(format, args...)}}
}

// badRequestf is problemf for 400 bad_request.
func badRequestf(format string, args ...any) error {
	return problemf(http.StatusBadRequest, "bad_request", format, args...)
}

// problemFor maps an error from the engine, the store or a handler onto
// its problem. ok is false for an error nobody expected: the caller logs
// it and answers 500 without its text.
func problemFor(err error) (p Problem, ok bool) {
	var (
		pe *problemError
		fe *rows.FileError
		re *batch.ReportError
		me *http.MaxBytesError
	)
	switch {
	case errors.As(err, &pe):
		return pe.p, true
	case errors.As(err, &me), errors.Is(err, filestore.ErrTooLarge):
		return Problem{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Detail: err.Error()}, true
	case errors.As(err, &re):
		return Problem{Status: http.StatusConflict, Code: "report_of_batch", BatchID: re.BatchID,
			Detail: fmt.Sprintf("%s is the error report of batch %d: re-run that batch with it (POST /v1/batches/%d/rerun), or import it as a new batch (new_batch=true)", re.SourceName, re.BatchID, re.BatchID)}, true
	case errors.As(err, &fe):
		return Problem{Status: http.StatusUnprocessableEntity, Code: "file_rejected", Detail: err.Error(), Hints: rows.HintsOf(err)}, true
	case errors.Is(err, batch.ErrUnknownKind):
		return Problem{Status: http.StatusNotFound, Code: "unknown_kind", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrKeyReused):
		return Problem{Status: http.StatusConflict, Code: "idempotency_key_reused", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrBatchBusy):
		return Problem{Status: http.StatusConflict, Code: "batch_busy", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrRowLocked):
		return Problem{Status: http.StatusConflict, Code: "row_locked", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrValuesPurged):
		return Problem{Status: http.StatusConflict, Code: "values_purged", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrNotFound):
		return Problem{Status: http.StatusNotFound, Code: "not_found", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrPastBound):
		return Problem{Status: http.StatusConflict, Code: "past_bound", Detail: err.Error() + "; raise the bound first (POST /v1/batches/{id}/limit)"}, true
	case errors.Is(err, batch.ErrConflict):
		return Problem{Status: http.StatusConflict, Code: "conflict", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrNoMatch):
		// Well-formed, and nothing to do: no batch was created.
		return Problem{Status: http.StatusUnprocessableEntity, Code: "no_match", Detail: err.Error()}, true
	case errors.Is(err, batch.ErrBadParams), errors.Is(err, batch.ErrNotRecalc), errors.Is(err, batch.ErrInvalidRequest):
		return Problem{Status: http.StatusBadRequest, Code: "bad_request", Detail: err.Error()}, true
	case errors.Is(err, filestore.ErrNotFound):
		return Problem{Status: http.StatusNotFound, Code: "file_not_kept", Detail: err.Error()}, true
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
		return Problem{Status: 499, Code: "internal", Detail: "request cancelled"}, true
	}
	return Problem{Status: http.StatusInternalServerError, Code: "internal", Detail: "internal error; the server's log has the details"}, false
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Code == "" {
		p.Code = "internal"
	}
	if p.Title == "" {
		p.Title = ProblemCodes[p.Code]
	}
	p.Type = ProblemTypePrefix + p.Code
	if r != nil && p.Instance == "" {
		p.Instance = r.URL.Path
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	status := p.Status
	if status == 499 {
		status = http.StatusBadRequest
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p)
}

// writeError answers with a problem of status and code.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeProblem(w, nil, Problem{Status: status, Code: code, Detail: msg})
}
