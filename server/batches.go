package server

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/rows"
)

func (s *Server) registry() *batch.Registry { return s.cfg.Engine.Registry() }

// me says who the token acts for.
func (s *Server) me(w http.ResponseWriter, _ *http.Request, p Principal) error {
	writeJSON(w, http.StatusOK, map[string]string{"tenant_id": p.TenantID, "role": p.Role, "name": p.Name})
	return nil
}

// KindView is a kind as GET /v1/kinds lists it.
type KindView struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Direction   string          `json:"direction"`
	Guarantee   batch.Guarantee `json:"guarantee,omitempty"`
	// Source is where the kind is defined: "" built in, "schema v3".
	Source string `json:"source,omitempty"`
	// Columns are the kind's column names, in order.
	Columns  []string `json:"columns"`
	Required []string `json:"required"`
}

func (s *Server) kinds(w http.ResponseWriter, _ *http.Request, _ Principal) error {
	reg := s.registry()
	var out []KindView
	for _, k := range append(reg.Kinds(), reg.ExportKinds()...) {
		kv := KindView{Name: k.Name, Description: k.Description, Direction: k.Direction, Guarantee: k.Guarantee, Source: k.Source,
			Columns: []string{}, Required: k.Required}
		for _, c := range k.Columns {
			kv.Columns = append(kv.Columns, c.Name)
		}
		if kv.Required == nil {
			kv.Required = []string{}
		}
		out = append(out, kv)
	}
	writeJSON(w, http.StatusOK, map[string]any{"kinds": out})
	return nil
}

// batchStatuses are the statuses a list may filter by.
var batchStatuses = []string{"ingesting", string(batchtype.StatusRunning), string(batchtype.StatusFinished), string(batchtype.StatusCancelled)}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request, p Principal) error {
	limit, before, err := pageParams(r, "before", 20, 200)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !slices.Contains(batchStatuses, status) {
		return badRequestf("status=%q: want one of %v", status, batchStatuses)
	}
	kind := q.Get("kind")
	attention, err := strconv.ParseBool(cmp.Or(q.Get("attention"), "false"))
	if err != nil {
		return badRequestf("attention=%q: want true or false", q.Get("attention"))
	}
	bs, err := s.cfg.Engine.Batches(r.Context(), batch.BatchesParams{TenantID: p.TenantID, BeforeID: before, Limit: int(limit) + 1,
		Status: batchtype.Status(status), Kind: kind, NeedsAttention: attention})
	if err != nil {
		return err
	}
	bs, next := keyset(bs, limit, func(b *batchtype.Batch) int64 { return b.ID })
	out := make([]*BatchView, len(bs))
	for i, b := range bs {
		out[i] = view(b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"batches": out, "next_before": next})
	return nil
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request, p Principal) error {
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view(b))
	return nil
}

// batch reads the path's batch with the caller's tenant.
func (s *Server) batch(r *http.Request, p Principal) (*batchtype.Batch, error) {
	id, err := pathInt(r, "id")
	if err != nil {
		return nil, err
	}
	b, err := s.cfg.Engine.Batch(r.Context(), batch.BatchParams{TenantID: p.TenantID, ID: id})
	if errors.Is(err, batch.ErrNotFound) {
		return nil, problemf(http.StatusNotFound, "not_found", "no batch %d", id)
	}
	return b, err
}

// createRequest is the JSON body of POST /v1/batches: a kind and either a
// preview's upload or the rows themselves.
type createRequest struct {
	Kind string `json:"kind"`
	// Upload is the upload id a preview returned: opaque, and good for
	// the tenant that previewed only.
	Upload     string        `json:"upload,omitempty"`
	SourceName string        `json:"source_name,omitempty"`
	Options    ImportOptions `json:"options,omitzero"`
	// rows, when the body had them, were written to this CSV file.
	rows *upload
}

// createBatch imports a file: POST /v1/batches as multipart/form-data (a
// part named file, and kind), or as JSON with a preview's upload or the
// rows. The Idempotency-Key header makes the import happen once: the same
// key with the same content and options answers the same batch (200),
// with other content or other options 409.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, p Principal) error {
	var (
		req createRequest
		up  *upload
	)
	switch mediaType(r) {
	case "multipart/form-data":
		f, err := s.readForm(w, r, p.TenantID)
		if err != nil {
			return err
		}
		if f.file == nil {
			return badRequestf("multipart body: no part named file")
		}
		req.Kind = f.value("kind")
		if req.Options, err = optionsFromForm(f, "kind"); err != nil {
			return err
		}
		up = f.file
	case "application/json":
		if err := s.readCreateJSON(w, r, p.TenantID, &req); err != nil {
			return err
		}
		switch {
		case req.rows != nil && req.Upload != "":
			return badRequestf("give either rows or upload, not both")
		case req.rows != nil:
			up = req.rows
			if req.SourceName != "" {
				up.Name = fileName(req.SourceName)
			}
		case req.Upload != "":
			up = &upload{ID: req.Upload, Name: uploadName(req.SourceName)}
		default:
			return badRequestf("the body has neither rows nor an upload: send rows, or the upload a preview returned")
		}
	default:
		return problemf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send multipart/form-data with a file, or application/json")
	}
	if req.Kind == "" {
		return badRequestf("kind is required; GET /v1/kinds lists them")
	}
	if !s.registry().Has(req.Kind) {
		return problemf(http.StatusNotFound, "unknown_kind", "no import kind %q; GET /v1/kinds lists them", req.Kind)
	}
	params := batch.ImportParams{TenantID: p.TenantID, Kind: req.Kind, SourceName: up.Name,
		IdempotencyKey: r.Header.Get("Idempotency-Key"), Read: rows.ReadOptions{TmpDir: s.cfg.TmpDir}}
	if err := req.Options.apply(&params); err != nil {
		return err
	}
	if req.rows != nil {
		params.Format = batch.FormatCSV
	}
	b, err := s.importKept(r, p.TenantID, up, params)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if b.Reused {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", fmt.Sprintf("/v1/batches/%d", b.ID))
	writeJSON(w, status, view(b))
	return nil
}

// importKept imports a file kept for the tenant.
func (s *Server) importKept(r *http.Request, tenant string, up *upload, params batch.ImportParams) (*batchtype.Batch, error) {
	if len(params.IdempotencyKey) > 255 {
		return nil, badRequestf("the Idempotency-Key is longer than 255 characters")
	}
	f, err := s.openUpload(tenant, up, "preview the file again")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	params.Source, params.SourceName = f, up.Name
	return s.cfg.Engine.Import(r.Context(), params)
}

// readCreateJSON reads the JSON body of POST /v1/batches, streaming: the
// rows go one at a time into a CSV file in the tenant's files, so that a
// large body is never whole in memory.
func (s *Server) readCreateJSON(w http.ResponseWriter, r *http.Request, tenant string, req *createRequest) error {
	dec := json.NewDecoder(bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, s.cfg.MaxUpload), 64<<10))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return badRequestf("request body: want a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return badRequestf("request body: %v", jsonProblem(err))
		}
		var field any
		switch t {
		case "kind":
			field = &req.Kind
		case "upload":
			field = &req.Upload
		case "source_name":
			field = &req.SourceName
		case "options":
			field = &req.Options
		case "rows":
			up, err := s.keepRows(dec, tenant)
			if err != nil {
				return err
			}
			req.rows = up
			continue
		default:
			return badRequestf("request body: unknown member %q (kind, upload, source_name, options, rows)", t)
		}
		if err := dec.Decode(field); err != nil {
			return badRequestf("request body: %v: %v", t, jsonProblem(err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return badRequestf("request body: %v", jsonProblem(err))
	}
	return nil
}

// keepRows writes a JSON array of row objects as CSV into the tenant's
// files.
func (s *Server) keepRows(dec *json.Decoder, tenant string) (*upload, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, badRequestf("rows: want an array of objects")
	}
	fw, err := s.cfg.Files.Create(tenant)
	if err != nil {
		return nil, err
	}
	defer fw.Abort()
	bw := bufio.NewWriterSize(fw, 64<<10)
	j := &jsonRows{w: csv.NewWriter(bw)}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, badRequestf("rows[%d]: %v", j.n, jsonProblem(err))
		}
		if err := j.add(raw); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, badRequestf("rows: %v", jsonProblem(err))
	}
	if j.n == 0 {
		return nil, badRequestf("rows is empty")
	}
	j.w.Flush()
	if err := j.w.Error(); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	info, err := fw.Commit()
	if err != nil {
		return nil, err
	}
	return &upload{Info: info, Name: "rows.csv"}, nil
}

// PreviewView is what an import of a file would do, shown before it is
// made: how the file reads, how its header maps, its first rows, and the
// counts of a dry run of every row.
type PreviewView struct {
	// Upload is the kept file's upload id: POST /v1/batches {"kind",
	// "upload"} imports it without sending it again. It is random and
	// opaque (not the content's digest), and names the file for the
	// previewing tenant only.
	Upload     string `json:"upload"`
	SourceName string `json:"source_name"`
	Size       int64  `json:"size"`
	batch.SourceInfo
	Header  []string      `json:"header"`
	Rows    []rows.Record `json:"rows"`
	Mapping *MappingView  `json:"mapping,omitempty"`
	// Counts, ErrorCounts, Errors and Warnings are a dry run's: every row
	// read and validated as the import would, nothing written.
	Counts      rows.Counts       `json:"counts"`
	ErrorCounts []rows.ErrorCount `json:"error_counts"`
	Errors      []rows.FieldError `json:"errors"`
	Warnings    []WarningView     `json:"warnings"`
	Conventions rows.Conventions  `json:"conventions,omitzero"`
	// Rejected says why an import would refuse the file as a whole; ""
	// when it would not.
	Rejected string `json:"rejected,omitempty"`
	// RowOutcomes are the dry run's outcomes of the file's first rows
	// (those of Rows, by row number), each with every error: the state
	// each previewed row would have.
	RowOutcomes []RowOutcomeView `json:"row_outcomes"`
	// SavedOptions are the options of the tenant's last import of this
	// kind from a file with the same header, to offer again.
	SavedOptions *SavedOptionsView `json:"saved_options,omitempty"`
}

// previewRows is how many rows a preview shows.
const previewRows = 10

// preview keeps an uploaded file and shows what importing it would do.
func (s *Server) preview(w http.ResponseWriter, r *http.Request, p Principal) error {
	f, err := s.readForm(w, r, p.TenantID)
	if err != nil {
		return err
	}
	if f.file == nil {
		return badRequestf("multipart body: no part named file")
	}
	kind := f.value("kind")
	if kind != "" && !s.registry().Has(kind) {
		return problemf(http.StatusNotFound, "unknown_kind", "no import kind %q; GET /v1/kinds lists them", kind)
	}
	opts, err := optionsFromForm(f, "kind")
	if err != nil {
		return err
	}
	params := batch.ImportParams{Kind: kind, SourceName: f.file.Name, Read: rows.ReadOptions{TmpDir: s.cfg.TmpDir}}
	if err := opts.apply(&params); err != nil {
		return err
	}
	id, err := s.cfg.Files.NewUpload(p.TenantID, f.file.Digest, f.file.Name)
	if err != nil {
		return err
	}
	pv := &PreviewView{Upload: id, SourceName: f.file.Name, Size: f.file.Size, Header: []string{}, Rows: []rows.Record{},
		ErrorCounts: []rows.ErrorCount{}, Errors: []rows.FieldError{}, Warnings: []WarningView{}, Counts: rows.Counts{},
		RowOutcomes: []RowOutcomeView{}}
	if err := s.previewRead(r, p.TenantID, f.file, params, pv); err != nil {
		return err
	}
	if pv.SavedOptions, err = s.savedOptions(r, p.TenantID, kind, pv.Header); err != nil {
		return err
	}
	if kind != "" && pv.Rejected == "" && !pv.mappingRejected() {
		if err := s.previewDryRun(r, p.TenantID, f.file, params, pv); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, pv)
	return nil
}

// previewRead reads the header and the first rows.
func (s *Server) previewRead(r *http.Request, tenant string, up *upload, params batch.ImportParams, pv *PreviewView) error {
	file, err := s.cfg.Files.Open(tenant, up.Digest)
	if err != nil {
		return err
	}
	defer file.Close()
	rd, err := s.registry().OpenReader(bufio.NewReader(file), params)
	if err != nil {
		return rejected(err, pv)
	}
	defer rd.Close()
	pv.SourceInfo, pv.Header = rd.Info(), rd.Header()
	for len(pv.Rows) < previewRows {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rejected(err, pv)
		}
		pv.Rows = append(pv.Rows, rec)
	}
	if params.Kind != "" {
		m, err := s.registry().HeaderMapping(params.Kind, pv.Header, params.Conventions)
		if err != nil {
			return err
		}
		pv.Mapping = viewMapping(m)
	}
	return r.Context().Err()
}

// previewDryRun validates every row as the import would.
func (s *Server) previewDryRun(r *http.Request, tenant string, up *upload, params batch.ImportParams, pv *PreviewView) error {
	file, err := s.cfg.Files.Open(tenant, up.Digest)
	if err != nil {
		return err
	}
	defer file.Close()
	params.Source = file
	res, err := s.registry().DryRun(r.Context(), params)
	if err != nil {
		return rejected(err, pv)
	}
	pv.Counts, pv.Conventions = res.Counts, res.Conventions
	for _, o := range res.First {
		pv.RowOutcomes = append(pv.RowOutcomes, RowOutcomeView{Row: o.Row, State: o.State, Errors: append([]rows.FieldError{}, o.Errors...)})
	}
	pv.ErrorCounts = append(pv.ErrorCounts, res.ErrorCounts...)
	pv.Errors = append(pv.Errors, res.Errors...)
	pv.Warnings = append(pv.Warnings, viewWarnings(res.Warnings)...)
	return nil
}

// rejected records a file the import would refuse; any other error is
// returned.
func rejected(err error, pv *PreviewView) error {
	var fe *rows.FileError
	var re *batch.ReportError
	switch {
	case errors.As(err, &fe), errors.As(err, &re):
		pv.Rejected = err.Error()
		return nil
	}
	return err
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, p Principal) error {
	return s.control(w, r, p, func(id int64) (*batchtype.Batch, error) { return s.cfg.Engine.Cancel(r.Context(), p.TenantID, id) })
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request, p Principal) error {
	return s.control(w, r, p, func(id int64) (*batchtype.Batch, error) {
		return s.cfg.Engine.PauseBatch(r.Context(), p.TenantID, id, true)
	})
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request, p Principal) error {
	return s.control(w, r, p, func(id int64) (*batchtype.Batch, error) {
		return s.cfg.Engine.PauseBatch(r.Context(), p.TenantID, id, false)
	})
}

// limitBody is the body of POST /v1/batches/{id}/limit.
type limitBody struct {
	MaxFailed *string `json:"max_failed"`
}

// limit changes a batch's failure bound (Engine.Limit).
func (s *Server) limit(w http.ResponseWriter, r *http.Request, p Principal) error {
	var body limitBody
	if err := decodeJSON(w, r, &body, 4<<10, false); err != nil {
		return err
	}
	if body.MaxFailed == nil {
		return badRequestf("max_failed: required (N, P%% or none)")
	}
	bound, err := batch.ParseThreshold(*body.MaxFailed)
	if err != nil {
		return badRequestf("max_failed: %v", err)
	}
	return s.control(w, r, p, func(id int64) (*batchtype.Batch, error) {
		return s.cfg.Engine.Limit(r.Context(), p.TenantID, id, bound)
	})
}

func (s *Server) control(w http.ResponseWriter, r *http.Request, _ Principal, f func(int64) (*batchtype.Batch, error)) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	b, err := f(id)
	if errors.Is(err, batch.ErrNotFound) {
		return problemf(http.StatusNotFound, "not_found", "no batch %d", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view(b))
	return nil
}

// retry makes failed and dead rows (or the states the body names) due
// again.
func (s *Server) retry(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	var req struct {
		States []rows.State `json:"states"`
	}
	if err := decodeJSON(w, r, &req, maxJSONBody, true); err != nil {
		return err
	}
	if _, err := s.batch(r, p); err != nil {
		return err
	}
	n, err := s.cfg.Engine.Retry(r.Context(), batch.RetryParams{TenantID: p.TenantID, BatchID: id, States: req.States, Actor: p.Actor()})
	if err != nil {
		return err
	}
	b, err := s.batch(r, p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"retried": n, "batch": view(b)})
	return nil
}

// rerun parses the batch's rows again: its stored rows under the kind's
// current rules, or a corrected file (multipart, or a preview's upload
// id, looked up under the caller's tenant).
func (s *Server) rerun(w http.ResponseWriter, r *http.Request, p Principal) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	params := batch.RerunParams{TenantID: p.TenantID, BatchID: id, Actor: p.Actor(), Read: rows.ReadOptions{TmpDir: s.cfg.TmpDir}}
	var (
		up   *upload
		opts ImportOptions
	)
	switch mediaType(r) {
	case "multipart/form-data":
		f, err := s.readForm(w, r, p.TenantID)
		if err != nil {
			return err
		}
		if opts, err = optionsFromForm(f); err != nil {
			return err
		}
		up = f.file
	default:
		var req struct {
			Upload     string        `json:"upload"`
			SourceName string        `json:"source_name"`
			Options    ImportOptions `json:"options,omitzero"`
		}
		if err := decodeJSON(w, r, &req, maxJSONBody, true); err != nil {
			return err
		}
		if req.Upload != "" {
			up = &upload{ID: req.Upload, Name: uploadName(req.SourceName)}
		}
		opts = req.Options
	}
	if _, err := s.batch(r, p); err != nil {
		return err
	}
	// The options go with the stored rows too: a batch imported without
	// its locale is fixed by a re-run with it.
	ip := batch.ImportParams{Read: params.Read}
	if err := opts.apply(&ip); err != nil {
		return err
	}
	params.Read, params.Conventions = ip.Read, ip.Conventions
	if up != nil {
		f, err := s.openUpload(p.TenantID, up, "send the file again")
		if err != nil {
			return err
		}
		defer f.Close()
		params.Source, params.SourceName = f, up.Name
	}
	res, err := s.cfg.Engine.Rerun(r.Context(), params)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"batch": view(res.Batch), "reparsed": res.Reparsed, "added": res.Added,
		"valid": res.Valid, "invalid": res.Invalid, "kept": res.Kept, "matched_by": res.MatchedBy})
	return nil
}

// openKept opens a file kept for the tenant, for the handlers that stream
// one back.
func (s *Server) openKept(tenant, digest string) (*os.File, error) {
	f, err := s.cfg.Files.Open(tenant, digest)
	if err != nil {
		return nil, problemf(http.StatusNotFound, "file_not_kept", "the file is not kept (it was imported from the command line, or its retention is over)")
	}
	return f, nil
}

// openUpload opens an upload under the tenant: the file this request
// sent, by its digest, or the one of an upload id a client gave back.
// An id is looked up under the caller's tenant only, so another tenant's
// id (or a digest, which is no id) is not kept, exactly as an id never
// handed out; the answer does not repeat it. again says what to do.
func (s *Server) openUpload(tenant string, up *upload, again string) (*os.File, error) {
	if up.ID == "" {
		return s.cfg.Files.Open(tenant, up.Digest)
	}
	f, info, err := s.cfg.Files.OpenUpload(tenant, up.ID)
	if errors.Is(err, filestore.ErrNotFound) {
		return nil, problemf(http.StatusNotFound, "file_not_kept", "the upload is not kept (%s)", again)
	}
	if err == nil && up.Name == "" {
		// No source_name with the id: the name the file was sent under.
		up.Name = fileName(info.Name)
	}
	return f, err
}
