package server

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/filestore"
	"github.com/rowfate/rowfate/rows"
)

// maxFields bounds the form fields of a multipart upload besides its file,
// and maxFieldBytes each field's size: options are short.
const (
	maxFields     = 64
	maxFieldBytes = 64 << 10
)

// upload is a file a request sent, kept in the file store under the
// caller's tenant: by its digest when this request sent it, or by the
// upload id a client gave back (a preview's).
type upload struct {
	filestore.Info
	// ID is the upload id a client gave; "" for a file this request sent.
	ID string
	// Name is the file's name as the client gave it, without a folder.
	Name string
}

// form is a multipart request: its fields, and its file when it had one.
type form struct {
	fields map[string][]string
	file   *upload
}

func (f *form) value(name string) string {
	if vs := f.fields[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// readForm streams a multipart/form-data request: the part named "file"
// goes straight into the tenant's files (never whole into memory), at
// most MaxUpload bytes; the other parts are small fields.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request, tenant string) (*form, error) {
	if mediaType(r) != "multipart/form-data" {
		return nil, problemf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the file as multipart/form-data (a part named file), not %q", r.Header.Get("Content-Type"))
	}
	// The fields and the parts' headers take a little more than the file.
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUpload+maxFields*maxFieldBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequestf("multipart body: %v", err)
	}
	f := &form{fields: map[string][]string{}}
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bodyError(err)
		}
		name := part.FormName()
		switch {
		case name == "file":
			if f.file != nil {
				return nil, badRequestf("multipart body: more than one part named file")
			}
			up, err := s.keep(tenant, part, fileName(part.FileName()))
			if err != nil {
				return nil, err
			}
			f.file = up
		case n >= maxFields:
			return nil, badRequestf("multipart body: more than %d fields", maxFields)
		default:
			b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
			if err != nil {
				return nil, bodyError(err)
			}
			if len(b) > maxFieldBytes {
				return nil, badRequestf("form field %s: longer than %d bytes", name, maxFieldBytes)
			}
			f.fields[name] = append(f.fields[name], string(b))
		}
		part.Close()
	}
	return f, nil
}

// bodyError is a failure to read the request body: too large, or a
// malformed or truncated body.
func bodyError(err error) error {
	var me *http.MaxBytesError
	if errors.As(err, &me) {
		return fmt.Errorf("request body: %w", err)
	}
	return badRequestf("multipart body: %v", err)
}

// keep streams r into the tenant's files, at most MaxUpload bytes.
func (s *Server) keep(tenant string, r io.Reader, name string) (*upload, error) {
	info, err := s.cfg.Files.Put(tenant, r, s.cfg.MaxUpload)
	if err != nil {
		if errors.Is(err, filestore.ErrTooLarge) {
			return nil, problemf(http.StatusRequestEntityTooLarge, "too_large", "%s is larger than the %d bytes a file may have (serve --max-upload)", name, s.cfg.MaxUpload)
		}
		return nil, bodyError(err)
	}
	return &upload{Info: info, Name: name}, nil
}

// fileName is a client's file name without its folder (browsers on
// Windows once sent the whole path), never empty.
func fileName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = strings.TrimSpace(filepath.Base(filepath.FromSlash(name)))
	if name == "" || name == "." || name == "/" || !utf8.ValidString(name) {
		return "upload"
	}
	return name
}

// uploadName is the source_name a client gave with an upload id, ""
// when it gave none: the upload's own name is used then (openUpload).
func uploadName(sourceName string) string {
	if strings.TrimSpace(sourceName) == "" {
		return ""
	}
	return fileName(sourceName)
}

// ImportOptions are what a client says about its file, as batchctl
// import's flags do: how to read it and how it writes numbers and dates.
// Anything left out is detected or settled from the file, never guessed.
type ImportOptions struct {
	Encoding  string `json:"encoding,omitempty"`
	Delimiter string `json:"delimiter,omitempty"`
	// Quote is a text file's quote character: " (the default) or '.
	Quote string `json:"quote,omitempty"`
	// Escape escapes a quote inside a quoted cell (\); default none: quotes
	// are doubled.
	Escape    string `json:"escape,omitempty"`
	Sheet     string `json:"sheet,omitempty"`
	HeaderRow int64  `json:"header_row,omitempty"`
	// Locale is the number format: en, de, fr, ch, or a language-region.
	Locale       string `json:"locale,omitempty"`
	DecimalComma bool   `json:"decimal_comma,omitempty"`
	// DateOrder is dmy or mdy.
	DateOrder string `json:"date_order,omitempty"`
	// DateFormat is what compact dates mean: ddmmyy, yymmdd, mmddyy,
	// ddmmyyyy, yyyymmdd, mmddyyyy, serial or a strptime pattern.
	DateFormat string `json:"date_format,omitempty"`
	// Map renames file columns onto the kind's: {"Amount (EUR)": "amount"}.
	Map map[string]string `json:"map,omitempty"`
	// Ignore are file columns the kind does not read: a column that looks
	// like one of the kind's columns, which stops the import, is ignored
	// when named here.
	Ignore []string `json:"ignore,omitempty"`
	// Strict rejects a file with a column the kind does not know or
	// without one of its optional columns.
	Strict bool `json:"strict,omitempty"`
	// MaxInvalid rejects the file, nothing written, when more than N
	// ("10") or P% ("2.5%") of its rows are invalid.
	MaxInvalid string `json:"max_invalid,omitempty"`
	// MaxFailed pauses the batch once more than N ("10") or P% ("5%") of
	// its rows to work have failed or died.
	MaxFailed string `json:"max_failed,omitempty"`
	// NewBatch imports the file as a new batch: without it, a file the
	// tenant already imported as the kind with the same options answers
	// that batch (200), and an error report of a batch is refused
	// (report_of_batch: re-run that batch with it).
	NewBatch bool `json:"new_batch,omitempty"`
}

// optionFields are the form fields optionsFromForm reads: ImportOptions'
// JSON members.
var optionFields = []string{"encoding", "delimiter", "quote", "escape", "sheet", "header_row", "locale", "decimal_comma", "date_order",
	"date_format", "map", "ignore", "strict", "new_batch", "max_invalid", "max_failed"}

// optionsFromForm reads ImportOptions from form fields named as the JSON
// members; map is repeatable as "file column=kind column". extra are the
// other fields the endpoint reads (kind): any other field is refused, as
// an unknown JSON member is, rather than ignored (a misspelt locale would
// import the file without it).
func optionsFromForm(f *form, extra ...string) (ImportOptions, error) {
	for name := range f.fields {
		if !slices.Contains(optionFields, name) && !slices.Contains(extra, name) {
			return ImportOptions{}, badRequestf("form field %s: not one this endpoint reads (%s)", name, strings.Join(append(slices.Clone(extra), optionFields...), ", "))
		}
	}
	o := ImportOptions{
		Encoding: f.value("encoding"), Delimiter: f.value("delimiter"), Quote: f.value("quote"), Escape: f.value("escape"), Sheet: f.value("sheet"),
		Locale: f.value("locale"), DateOrder: f.value("date_order"), DateFormat: f.value("date_format"),
		MaxInvalid: f.value("max_invalid"), MaxFailed: f.value("max_failed"),
	}
	if v := f.value("header_row"); v != "" {
		if _, err := fmt.Sscan(v, &o.HeaderRow); err != nil {
			return o, badRequestf("form field header_row=%q: want a row number", v)
		}
	}
	var err error
	for name, p := range map[string]*bool{"decimal_comma": &o.DecimalComma, "strict": &o.Strict, "new_batch": &o.NewBatch} {
		if *p, err = boolField(f.fields, name); err != nil {
			return o, err
		}
	}
	for _, m := range f.fields["map"] {
		from, to, ok := strings.Cut(m, "=")
		if !ok || strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
			return o, badRequestf("form field map=%q: want 'file column=kind column'", m)
		}
		if o.Map == nil {
			o.Map = map[string]string{}
		}
		o.Map[strings.TrimSpace(from)] = strings.TrimSpace(to)
	}
	o.Ignore = f.fields["ignore"]
	return o, nil
}

// apply checks the options and sets them on p.
func (o ImportOptions) apply(p *batch.ImportParams) error {
	fo := batch.FileOptions{Encoding: o.Encoding, Delimiter: o.Delimiter, Quote: o.Quote, Escape: o.Escape, Sheet: o.Sheet, HeaderRow: o.HeaderRow,
		Locale: o.Locale, DecimalComma: o.DecimalComma, DateOrder: o.DateOrder, DateFormat: o.DateFormat}
	froms := make([]string, 0, len(o.Map))
	for from := range o.Map {
		froms = append(froms, from)
	}
	slices.Sort(froms) // a map has no order; renames are applied in one
	for _, from := range froms {
		fo.Renames = append(fo.Renames, rows.Rename{From: strings.TrimSpace(from), To: strings.TrimSpace(o.Map[from])})
	}
	fo.Ignore = o.Ignore
	if err := fo.Apply(p); err != nil {
		return badRequestf("option %v", err)
	}
	p.Strict = o.Strict
	p.NewBatch = o.NewBatch
	max, err := batch.ParseThreshold(o.MaxInvalid)
	if err != nil {
		return badRequestf("option max_invalid: %v", err)
	}
	p.MaxInvalid = max
	if p.MaxFailed, err = batch.ParseThreshold(o.MaxFailed); err != nil {
		return badRequestf("option max_failed: %v", err)
	}
	return nil
}

// jsonRows streams the "rows" array of a JSON body into a CSV file in the
// file store: a row is an object whose members are the columns, and every
// row must have the same members (a member left out of one row would be a
// cell the input did not mention, and an empty cell is not the same).
// Values are strings, numbers (kept as written) or booleans; null, objects
// and arrays are refused, naming the row and the column.
type jsonRows struct {
	header []string
	index  map[string]int
	w      *csv.Writer
	n      int
}

func (j *jsonRows) add(raw json.RawMessage) error {
	j.n++
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return badRequestf("rows[%d]: want an object of column: value", j.n-1)
	}
	first := j.header == nil
	var cells []string
	if !first {
		cells = make([]string, len(j.header))
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return badRequestf("rows[%d]: %v", j.n-1, jsonProblem(err))
		}
		col := t.(string)
		if seen[col] {
			return badRequestf("rows[%d]: column %q appears twice", j.n-1, col)
		}
		seen[col] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return badRequestf("rows[%d].%s: %v", j.n-1, col, jsonProblem(err))
		}
		var cell string
		switch x := v.(type) {
		case string:
			cell = x
		case json.Number:
			cell = x.String()
		case bool:
			cell = fmt.Sprint(x)
		case nil:
			return badRequestf(`rows[%d].%s is null: send "" for an empty cell, or leave the column out of every row`, j.n-1, col)
		default:
			return badRequestf("rows[%d].%s is an object or an array: a cell is a string, a number or a boolean", j.n-1, col)
		}
		if first {
			j.header = append(j.header, col)
			cells = append(cells, cell)
			continue
		}
		i, ok := j.index[col]
		if !ok {
			return badRequestf("rows[%d] has column %q, which rows[0] lacks: every row must have the same columns", j.n-1, col)
		}
		cells[i] = cell
	}
	if first {
		if len(j.header) == 0 {
			return badRequestf("rows[0] has no columns")
		}
		j.index = map[string]int{}
		for i, h := range j.header {
			j.index[h] = i
		}
		if err := j.w.Write(j.header); err != nil {
			return err
		}
	} else if len(seen) != len(j.header) {
		for _, h := range j.header {
			if !seen[h] {
				return badRequestf("rows[%d] lacks column %q, which rows[0] has: every row must have the same columns", j.n-1, h)
			}
		}
	}
	return j.w.Write(cells)
}
