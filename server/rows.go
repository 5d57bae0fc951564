package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// listRows pages through a batch's rows in row order, filtered by states,
// by an error's code and column, and by a where over the cells.
func (s *Server) listRows(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(r, "after", 50, 1000)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := batch.RowFilter{Code: q.Get("code"), Column: q.Get("column"), Where: q.Get("where")}
	for _, st := range strings.Split(q.Get("state"), ",") {
		if st = strings.TrimSpace(st); st == "" {
			continue
		}
		if !rows.State(st).Valid() {
			return badRequestf("state=%q is not a row state", st)
		}
		f.States = append(f.States, rows.State(st))
	}
	page, err := s.cfg.Engine.Rows(r.Context(), batch.RowsParams{TenantID: p.TenantID, BatchID: b.ID, Filter: f,
		AfterRowNo: after, Limit: int(limit) + 1})
	if err != nil {
		return err
	}
	page, next := keyset(page, limit, func(r batchtype.Row) int64 { return r.RowNo })
	writeJSON(w, http.StatusOK, map[string]any{"rows": viewRows(page), "next_after": next})
	return nil
}

// row reads the path's row.
func (s *Server) row(r *http.Request, p Principal) (*batchtype.Batch, *batchtype.Row, error) {
	b, err := s.batch(r, p)
	if err != nil {
		return nil, nil, err
	}
	n, err := pathInt(r, "row")
	if err != nil {
		return nil, nil, err
	}
	row, err := s.cfg.Engine.Row(r.Context(), batch.RowParams{TenantID: p.TenantID, BatchID: b.ID, RowNo: n})
	if errors.Is(err, batch.ErrNotFound) {
		return nil, nil, problemf(http.StatusNotFound, "not_found", "batch %d has no row %d", b.ID, n)
	}
	if err != nil {
		return nil, nil, err
	}
	return b, row, nil
}

// getRow shows one row with its state, attempts, errors and values.
func (s *Server) getRow(w http.ResponseWriter, r *http.Request, p Principal) error {
	_, row, err := s.row(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewRow(row))
	return nil
}

// editRow sets cells of a row and validates it again.
func (s *Server) editRow(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		Set map[string]string `json:"set"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	if len(req.Set) == 0 {
		return badRequestf(`set is empty: send {"set": {"column": "new value"}}`)
	}
	b, row, err := s.row(r, p)
	if err != nil {
		return err
	}
	out, err := s.cfg.Engine.EditRow(r.Context(), batch.EditRowParams{TenantID: p.TenantID, BatchID: b.ID, RowNo: row.RowNo, Set: req.Set, Actor: p.Actor()})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewRow(out))
	return nil
}

// skipRow marks a row skipped, with a reason.
func (s *Server) skipRow(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	if strings.TrimSpace(req.Reason) == "" {
		return badRequestf(`reason is required: send {"reason": "why"}`)
	}
	b, row, err := s.row(r, p)
	if err != nil {
		return err
	}
	if err := s.cfg.Engine.SkipRow(r.Context(), batch.SkipRowParams{TenantID: p.TenantID, BatchID: b.ID, RowNo: row.RowNo, Reason: req.Reason, Actor: p.Actor()}); err != nil {
		return err
	}
	_, row, err = s.row(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewRow(row))
	return nil
}

// history pages through a batch's re-runs, edits and skips, oldest first.
func (s *Server) history(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(r, "after", 100, 1000)
	if err != nil {
		return err
	}
	page, err := s.cfg.Engine.History(r.Context(), batch.HistoryParams{TenantID: p.TenantID, BatchID: b.ID, AfterID: after, Limit: int(limit) + 1})
	if err != nil {
		return err
	}
	page, next := keyset(page, limit, func(h batchtype.HistoryEntry) int64 { return h.ID })
	writeJSON(w, http.StatusOK, map[string]any{"history": viewHistory(page), "next_after": next})
	return nil
}

// parseStates reads a comma-separated list of row states.
func parseStates(v string) ([]rows.State, error) {
	if v == "" {
		return nil, nil
	}
	var out []rows.State
	for _, s := range strings.Split(v, ",") {
		st := rows.State(strings.TrimSpace(s))
		if !st.Valid() {
			return nil, badRequestf("states: %q is not a row state", s)
		}
		out = append(out, st)
	}
	return out, nil
}

// notFoundAs turns the store's not-found into the API's.
func notFoundAs(err error, format string, args ...any) error {
	if errors.Is(err, batch.ErrNotFound) {
		return problemf(http.StatusNotFound, "not_found", "%s", fmt.Sprintf(format, args...))
	}
	return err
}
