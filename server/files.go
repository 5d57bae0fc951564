package server

import (
	"fmt"
	"mime"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// formatParam reads ?format=csv|xlsx (default csv).
func formatParam(r *http.Request) (fileformat.Format, error) {
	name := r.URL.Query().Get("format")
	if name == "" {
		name = fileformat.CSV
	}
	f, err := fileformat.Lookup(strings.ToLower(name))
	if err != nil {
		return nil, badRequestf("format=%q: want one of %s", name, strings.Join(fileformat.Names(), ", "))
	}
	return f, nil
}

// contentType is the media type of a file of that name.
func contentType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return "text/csv; charset=utf-8"
	case ".xlsx":
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	case ".tsv", ".txt":
		return "text/plain; charset=utf-8"
	}
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// download starts a file response.
func download(w http.ResponseWriter, name string) {
	w.Header().Set("Content-Type", contentType(name))
	w.Header().Set("Content-Disposition", contentDisposition(name))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// report streams a batch's error report: its problem rows (or the states
// asked for) to fix and send again.
func (s *Server) report(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	f, err := formatParam(r)
	if err != nil {
		return err
	}
	states, err := parseStates(r.URL.Query().Get("states"))
	if err != nil {
		return err
	}
	// Refused before the status goes out: a problem, not a cut download.
	if err := batchtype.PurgedError(b, "the error report"); err != nil {
		return err
	}
	download(w, fmt.Sprintf("batch-%d-errors.%s", b.ID, f.Name()))
	if _, err := s.cfg.Engine.ErrorReport(r.Context(), batch.ErrorReportParams{TenantID: p.TenantID, BatchID: b.ID, States: states, Format: f.Name()}, w); err != nil {
		// The status is sent: cut the connection, so that the client
		// sees a broken download and not a short file that looks whole.
		s.cfg.Logger.Error("error report", "batch_id", b.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// file downloads the file a batch was made from (an upload) or wrote (an
// export), while the file store keeps it. The batch is read with the
// caller's tenant and its file opened among the tenant's files: another
// tenant's batch is not found, and its digest opens nothing here.
func (s *Server) file(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	f, err := s.openKept(p.TenantID, b.SourceDigest)
	if err != nil {
		return err
	}
	defer f.Close()
	name := fileName(b.SourceName)
	if name == "upload" || name == "-" {
		name = fmt.Sprintf("batch-%d", b.ID)
	}
	download(w, name)
	// ServeContent answers ranges and conditional requests; the digest
	// is a strong validator.
	w.Header().Set("ETag", `"`+b.SourceDigest+`"`)
	http.ServeContent(w, r, name, b.CreatedAt, f)
	return nil
}

// template downloads a kind's template: its header and an example row.
func (s *Server) template(w http.ResponseWriter, r *http.Request, _ Principal) error {
	kind := r.PathValue("kind")
	f, err := formatParam(r)
	if err != nil {
		return err
	}
	cols, err := s.registry().TemplateColumns(kind)
	if err != nil {
		return problemf(http.StatusNotFound, "unknown_kind", "no import kind %q; GET /v1/kinds lists them", kind)
	}
	download(w, kind+"-template."+f.Name())
	if err := f.WriteTemplate(w, cols, kind); err != nil {
		s.cfg.Logger.Error("template", "kind", kind, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// export writes an export kind's rows to a file kept among the tenant's
// files, recorded as a batch; GET /v1/batches/{id}/file downloads it. The
// fields where, batch and state narrow it as batchctl export's flags do.
func (s *Server) export(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		Kind   string `json:"kind"`
		Format string `json:"format"`
		Sheet  string `json:"sheet"`
		// Where, Batch and State are the export's filter
		// (batch.ExportFilter): a refused one is a 400 naming the field,
		// a batch the tenant does not have a 404; nothing is written.
		Where string `json:"where"`
		Batch int64  `json:"batch"`
		State string `json:"state"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	if !s.registry().HasExport(req.Kind) {
		return problemf(http.StatusNotFound, "unknown_kind", "no export kind %q; GET /v1/kinds lists them", req.Kind)
	}
	if req.Format == "" {
		req.Format = fileformat.CSV
	}
	f, err := fileformat.Lookup(strings.ToLower(req.Format))
	if err != nil {
		return badRequestf("format %q: want one of %s", req.Format, strings.Join(fileformat.Names(), ", "))
	}
	fw, err := s.cfg.Files.Create(p.TenantID)
	if err != nil {
		return err
	}
	defer fw.Abort()
	name := fmt.Sprintf("%s-%s.%s", req.Kind, time.Now().UTC().Format("20060102-150405"), f.Name())
	b, err := s.cfg.Engine.Export(r.Context(), req.Kind, batch.ExportParams{TenantID: p.TenantID, DestName: name, Dest: fw, Format: f.Name(),
		Write:  rows.WriteOptions{Sheet: req.Sheet, TmpDir: s.cfg.TmpDir},
		Filter: batch.ExportFilter{Where: req.Where, BatchID: req.Batch, State: rows.State(req.State)}})
	if err != nil {
		return err
	}
	if _, err := fw.Commit(); err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/batches/%d", b.ID))
	writeJSON(w, http.StatusCreated, view(b))
	return nil
}

// recalc starts a recalculation: a batch of the rows its kind's query
// yields for the parameters.
func (s *Server) recalc(w http.ResponseWriter, r *http.Request, p Principal) error {
	var req struct {
		Kind   string            `json:"kind"`
		Params map[string]string `json:"params"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, false); err != nil {
		return err
	}
	if !s.registry().IsRecalc(req.Kind) {
		return problemf(http.StatusNotFound, "unknown_kind", "no recalculation kind %q; GET /v1/kinds lists them (direction recalc)", req.Kind)
	}
	b, err := s.cfg.Engine.Recalc(r.Context(), batch.RecalcParams{TenantID: p.TenantID, Kind: req.Kind, Params: req.Params, TmpDir: s.cfg.TmpDir})
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/batches/%d", b.ID))
	writeJSON(w, http.StatusCreated, view(b))
	return nil
}
