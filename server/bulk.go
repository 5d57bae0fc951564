package server

import (
	"net/http"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
)

// bulkRequest is the body of POST /v1/batches/{id}/rows/bulk.
type bulkRequest struct {
	Action string `json:"action"`
	Filter struct {
		States []rows.State `json:"states"`
		Code   string       `json:"code"`
		Column string       `json:"column"`
		Where  string       `json:"where"`
	} `json:"filter"`
	All     bool   `json:"all"`
	Reason  string `json:"reason"`
	Column  string `json:"column"`
	Value   string `json:"value"`
	Find    string `json:"find"`
	Replace string `json:"replace"`
	Preview bool   `json:"preview"`
}

// bulkView is the answer of a bulk action.
type bulkView struct {
	Action  string `json:"action"`
	Preview bool   `json:"preview"`
	Matched int64  `json:"matched"`
	Changed int64  `json:"changed"`
	Valid   int64  `json:"valid"`
	Invalid int64  `json:"invalid"`
}

// bulkRows skips, retries, sets or replaces in every row of a batch a
// filter selects, or counts them (preview).
func (s *Server) bulkRows(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req bulkRequest
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	f := batch.RowFilter{States: req.Filter.States, Code: req.Filter.Code, Column: req.Filter.Column, Where: req.Filter.Where}
	if f.Empty() && !req.All {
		return badRequestf(`the filter is empty: send "filter": {"states": [...], "code": "...", "column": "...", "where": "..."}, or "all": true for every row`)
	}
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	res, err := s.cfg.Engine.BulkRows(r.Context(), batch.BulkRowsParams{TenantID: p.TenantID, BatchID: b.ID, Action: batch.BulkAction(req.Action),
		Filter: f, All: req.All,
		Reason: req.Reason, Column: req.Column, Value: req.Value, Find: req.Find, Replace: req.Replace, Preview: req.Preview, Actor: p.Actor()})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, bulkView{Action: string(res.Action), Preview: res.Preview, Matched: res.Matched, Changed: res.Changed, Valid: res.Valid, Invalid: res.Invalid})
	return nil
}
