package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// ErrBatchBusy: a re-run found rows processing (wait for the workers) or
// unknown (reconcile them first).
var ErrBatchBusy = driver.ErrBatchBusy

// RerunParams describe a re-run of a batch.
type RerunParams struct {
	TenantID string
	BatchID  int64
	// Source, when set, is a corrected file: its rows replace the batch's
	// rows that are not protected, matched by the report's row column (an
	// error report of this batch), else by the kind's natural key, else by
	// row number; a row that matches none is added. Without Source, the
	// stored rows that are not protected are validated again under the
	// kind's current rules.
	Source     io.Reader
	SourceName string
	Format     Format
	Read       rows.ReadOptions
	// Conventions declared for the re-run (a locale, a date order, a
	// mapping): what they declare replaces the batch's, for the file and
	// for every stored row parsed again, and is kept with the batch (its
	// workers read the rows with it) and in its history with the old.
	// What they leave open is the batch's (then settled from the file).
	Conventions rows.Conventions
	// Actor is who re-runs, for the history. Defaults to "unknown".
	Actor string
}

// RerunResult says what a re-run did.
type RerunResult struct {
	Batch *batchtype.Batch
	// Reparsed are stored rows parsed again; Added are new rows of the
	// file. Valid and Invalid split the two by their new outcome.
	Reparsed int64
	Added    int64
	Valid    int64
	Invalid  int64
	// Kept are rows the file had that match a completed, skipped or
	// reviewed row: those were left as they are.
	Kept int64
	// MatchedBy says how file rows were matched: "row" (an error report's
	// row column), "key" (the kind's natural key) or "row number"; ""
	// without a file.
	MatchedBy string
}

// reparsable reports whether a re-run parses a row in state s again: not
// completed or reviewed work (protected), not one a worker holds, not one
// whose effect may have happened (unknown).
func reparsable(s rows.State, reviewed bool) bool {
	return !s.Protected() && !reviewed && s != rows.StateProcessing && s != rows.StateUnknown
}

// stored is what a re-run needs of a batch's stored rows.
type stored struct {
	byRow map[int64]*storedRow
	// byKey are the rows of each natural key, in row order.
	byKey          map[[16]byte][]int64
	maxRow         int64
	maxChunk       int64
	reviewedOrDone int64
}

type storedRow struct {
	state    rows.State
	reviewed bool
	key      [16]byte
	hasKey   bool
	errors   []rows.FieldError
	// values are kept for the rows a re-run may parse again only.
	values []string
}

// Rerun parses a batch's rows again, keeping what is completed or was
// reviewed: succeeded and skipped rows, and rows a reviewer edited, are
// never touched, and a file row that matches one is passed over. The
// counts afterwards come from a recount over all the batch's rows. A
// cancelled batch runs again. Rows whose outcome is unknown must be
// reconciled first, and rows a worker holds finished: either is
// ErrBatchBusy, naming the rows.
//
// Rows parsed again and valid are worked by the next Work, under the same
// effect keys: an effect that is done is not run again, and one that
// failed for good is released, so a corrected row can claim it afresh.
func (e *Engine) Rerun(ctx context.Context, p RerunParams) (*RerunResult, error) {
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	if p.Actor == "" {
		p.Actor = "unknown"
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: p.BatchID})
	if err != nil {
		return nil, fmt.Errorf("re-run batch %d: %w", p.BatchID, err)
	}
	if err := batchtype.PurgedError(b, "a re-run"); err != nil {
		return nil, err
	}
	k, err := e.registry.lookup(b.Kind)
	if err != nil {
		return nil, fmt.Errorf("re-run batch %d: %w", b.ID, err)
	}
	if err := e.rerunnable(ctx, b); err != nil {
		return nil, err
	}
	conv := b.Conventions
	declared(&conv, p.Conventions)
	mb, err := k.mapHeader(b.Header, fitRenames(conv, b.Header))
	if err != nil {
		return nil, fmt.Errorf("re-run batch %d: its header no longer maps onto kind %s: %w", b.ID, b.Kind, err)
	}
	st, err := e.scanStored(ctx, b, k, mb)
	if err != nil {
		return nil, err
	}
	plan := &rerunPlan{e: e, b: b, k: k, mb: mb, st: st, header: b.Header, conv: conv, asked: p.Conventions, res: &RerunResult{}}
	if p.Source == nil {
		err = plan.revalidate(ctx)
	} else {
		err = plan.fromFile(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	return plan.commit(ctx, p)
}

// rerunnable refuses a re-run that would touch rows under a lease or whose
// outcome is unknown, naming them and what to do.
func (e *Engine) rerunnable(ctx context.Context, b *batchtype.Batch) error {
	for _, s := range []rows.State{rows.StateUnknown, rows.StateProcessing} {
		n := b.Counts[s]
		if n == 0 {
			continue
		}
		some, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, State: s, Limit: 10})
		if err != nil {
			return err
		}
		nos := make([]string, len(some))
		for i, r := range some {
			nos[i] = strconv.FormatInt(r.RowNo, 10)
		}
		list := strings.Join(nos, ", ")
		if int64(len(some)) < n {
			list += ", ..."
		}
		if s == rows.StateUnknown {
			return fmt.Errorf("re-run batch %d: %w: %d rows have an unknown outcome (rows %s): their effect may have happened; reconcile them first (the kind asks its downstream, or a person settles them)",
				b.ID, ErrBatchBusy, n, list)
		}
		return fmt.Errorf("re-run batch %d: %w: %d rows are being worked (rows %s): wait for the workers to finish (or cancel the batch), then re-run",
			b.ID, ErrBatchBusy, n, list)
	}
	return nil
}

// scanStored reads the batch's rows once: their states, the natural keys
// that take part in the duplicate check, and the values of the rows a
// re-run may parse again.
func (e *Engine) scanStored(ctx context.Context, b *batchtype.Batch, k rowReader, m *rows.Mapping) (*stored, error) {
	st := &stored{byRow: map[int64]*storedRow{}, byKey: map[[16]byte][]int64{}}
	var after int64
	for {
		page, err := e.store.RowsList(ctx, driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, AfterRowNo: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("re-run batch %d: %w", b.ID, err)
		}
		for _, r := range page {
			sr := &storedRow{state: r.State, reviewed: r.Reviewed, errors: r.Errors}
			if reparsable(r.State, r.Reviewed) {
				sr.values = r.Values
			} else {
				st.reviewedOrDone++
			}
			if key := k.key(m, r.Values); key != "" {
				sr.key, sr.hasKey = keyDigest(key), true
				st.byKey[sr.key] = append(st.byKey[sr.key], r.RowNo)
			}
			st.byRow[r.RowNo] = sr
			st.maxRow, st.maxChunk = max(st.maxRow, r.RowNo), max(st.maxChunk, r.ChunkNo)
		}
		if len(page) < 1000 {
			return st, nil
		}
		after = page[len(page)-1].RowNo
	}
}

// rerunPlan is a re-run being worked out: which rows get which values.
type rerunPlan struct {
	e      *Engine
	b      *batchtype.Batch
	k      kind
	mb     *rows.Mapping
	st     *stored
	header []string
	// conv are the batch's conventions with the re-run's declared ones
	// laid over them: the stored rows are checked, and later worked,
	// under them.
	conv rows.Conventions
	// asked are the conventions the re-run declared.
	asked rows.Conventions
	res   *RerunResult
	// replace and add are the rows to parse again and to add, in the
	// batch's layout, before the checks.
	replace []candidate
	add     []candidate
	// taken are the stored rows a file row already replaces.
	taken map[int64]bool
}

type candidate struct {
	row     int64
	values  []string
	readErr []rows.FieldError
}

// revalidate plans every row a re-run may parse again, with its values.
func (pl *rerunPlan) revalidate(ctx context.Context) error {
	nos := make([]int64, 0, len(pl.st.byRow))
	for no, r := range pl.st.byRow {
		if r.values != nil {
			nos = append(nos, no)
		}
	}
	slices.Sort(nos)
	for _, no := range nos {
		pl.replace = append(pl.replace, candidate{row: no, values: pl.st.byRow[no].values})
	}
	return ctx.Err()
}

// fromFile plans the rows of a corrected file.
func (pl *rerunPlan) fromFile(ctx context.Context, p RerunParams) error {
	conv := pl.conv
	conv.CommaColumns = nil // settled again from this file
	ip := ImportParams{TenantID: pl.b.TenantID, Kind: pl.b.Kind, SourceName: p.SourceName, Source: p.Source,
		Format: p.Format, Read: p.Read, Conventions: conv}
	src, err := prepare(ctx, pl.k, ip)
	if err != nil {
		return importError(ip, err)
	}
	defer src.close()
	r, err := src.open(nil)
	if err != nil {
		return importError(ip, err)
	}
	defer r.Close()
	mf, err := src.mapping(r)
	if err != nil {
		return err
	}
	layout := pl.layout(mf, r.Header())
	rowCol := -1
	if id, ok := ReportOf(r.Info()); ok && id == pl.b.ID {
		for i, h := range r.Header() {
			if rows.NormalizeHeader(h) == ReportRowColumn {
				rowCol = i
			}
		}
	}
	switch {
	case rowCol >= 0:
		pl.res.MatchedBy = "row"
	case pl.k.hasKey():
		pl.res.MatchedBy = "key"
	default:
		pl.res.MatchedBy = "row number"
	}
	pl.taken = map[int64]bool{}
	for rec, err := range src.records(ctx, r) {
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		if err != nil {
			return importError(ip, err)
		}
		target := pl.match(rec, rowCol, mf)
		if target == 0 {
			pl.add = append(pl.add, candidate{values: layout(rec.Values, nil), readErr: rec.Errors})
			continue
		}
		sr := pl.st.byRow[target]
		pl.taken[target] = true
		if sr.values == nil {
			pl.res.Kept++ // completed, skipped or reviewed: left as it is
			continue
		}
		pl.replace = append(pl.replace, candidate{row: target, values: layout(rec.Values, sr.values), readErr: rec.Errors})
	}
	return nil
}

// declared lays the conventions a re-run declares over the batch's. A
// declared number format also drops the columns flagged for decimal
// commas under the old one.
func declared(conv *rows.Conventions, d rows.Conventions) {
	if d.Number.Decimal != 0 || len(d.Number.Groups) > 0 {
		conv.Number, conv.CommaColumns = d.Number, nil
	}
	if d.DateOrder != rows.DateOrderUnknown {
		conv.DateOrder, conv.DateOrderRow = d.DateOrder, 0
	}
	if d.DateFormat != "" {
		conv.DateFormat = d.DateFormat
	}
	if len(d.Renames) > 0 {
		conv.Renames = d.Renames
	}
	if len(d.Ignore) > 0 {
		conv.Ignore = d.Ignore
	}
}

// fitRenames returns conv with only the renames of columns header has: a
// re-run's mapping may name a column of its file that the batch's header
// lacks (the file's rows are mapped with all of them).
func fitRenames(conv rows.Conventions, header []string) rows.Conventions {
	var kept []rows.Rename
	for _, r := range conv.Renames {
		if slices.ContainsFunc(header, func(h string) bool { return rows.NormalizeHeader(h) == rows.NormalizeHeader(r.From) }) {
			kept = append(kept, r)
		}
	}
	conv.Renames = kept
	return conv
}

// ReportOf returns the batch an error report names, by its title
// (rows.ReportTitle): its CSV title line or its XLSX subject.
func ReportOf(info rows.SourceInfo) (int64, bool) {
	if id, ok := rows.ParseReportTitle(info.Subject); ok {
		return id, true
	}
	for _, t := range info.Titles {
		if id, ok := rows.ParseReportTitle(t); ok {
			return id, true
		}
	}
	return 0, false
}

// match finds the stored row a file row stands for: by the report's row
// column, else by natural key, else by row number; 0 when none, or when
// the one it names was already taken by an earlier row of the file.
func (pl *rerunPlan) match(rec rows.Record, rowCol int, mf *rows.Mapping) int64 {
	free := func(no int64) int64 {
		if _, ok := pl.st.byRow[no]; ok && !pl.taken[no] {
			return no
		}
		return 0
	}
	if rowCol >= 0 && rowCol < len(rec.Values) {
		if no, err := strconv.ParseInt(strings.TrimSpace(rec.Values[rowCol]), 10, 64); err == nil {
			return free(no)
		}
	}
	if pl.k.hasKey() {
		if key := pl.k.key(mf, rec.Values); key != "" {
			for _, no := range pl.st.byKey[keyDigest(key)] {
				if !pl.taken[no] {
					return no
				}
			}
			return 0
		}
	}
	return free(rec.Row)
}

// layout returns how a file row's cells go into the batch's layout: each
// column of the kind the file has replaces the batch's cell, a column the
// file lacks keeps the stored cell (old; none for a new row). A kind
// column the batch's header lacks is added to it.
func (pl *rerunPlan) layout(mf *rows.Mapping, fileHeader []string) func(values, old []string) []string {
	type move struct{ from, to int }
	var moves []move
	for _, mc := range mf.Matched() {
		from := mf.Position(mc.Column)
		to := pl.mb.Position(mc.Column)
		if to < 0 {
			to = len(pl.header)
			pl.header = append(pl.header, fileHeader[from])
		}
		moves = append(moves, move{from, to})
	}
	return func(values, old []string) []string {
		out := make([]string, max(len(pl.header), len(old)))
		copy(out, old)
		for _, mv := range moves {
			if mv.from < len(values) {
				out[mv.to] = values[mv.from]
			} else {
				out[mv.to] = ""
			}
		}
		return out
	}
}

// commit checks the planned rows, in row order, under the batch's
// mapping, the duplicate check seeing every row that is kept, and writes
// the re-run.
func (pl *rerunPlan) commit(ctx context.Context, p RerunParams) (*RerunResult, error) {
	mb := pl.mb
	conv := fitRenames(pl.conv, pl.header)
	if len(pl.header) != len(pl.b.Header) {
		m, err := pl.k.mapHeader(pl.header, conv)
		if err != nil {
			return nil, fmt.Errorf("re-run batch %d: %w", pl.b.ID, err)
		}
		mb = m
	}
	replaced := map[int64]bool{}
	for _, c := range pl.replace {
		replaced[c.row] = true
	}
	// The keys of the rows that stay as they are, and are not invalid,
	// are taken already.
	keys := map[[16]byte]int64{}
	for no, sr := range pl.st.byRow {
		if !replaced[no] && sr.hasKey && sr.state != rows.StateInvalid {
			if first, ok := keys[sr.key]; !ok || no < first {
				keys[sr.key] = no
			}
		}
	}
	chk := newRowChecker(pl.k, mb)
	var tally rows.ErrorTally
	for no, sr := range pl.st.byRow {
		if !replaced[no] && sr.state == rows.StateInvalid {
			tally.Add(sr.errors)
		}
	}
	check := func(c candidate) (rows.State, []rows.FieldError) {
		errs, key := pl.k.check(ctx, mb, rows.Record{Row: c.row, Values: c.values, Errors: relabel(c.readErr, c.row)})
		if len(errs) == 0 && key != "" {
			d := keyDigest(key)
			if first, dup := keys[d]; dup && first != c.row {
				errs = []rows.FieldError{{Row: c.row, Column: chk.col.Header, Field: chk.col.Field, Code: rows.CodeDuplicateKey,
					Message: fmt.Sprintf("same %s as row %d", chk.name, first)}}
			} else {
				keys[d] = c.row
			}
		}
		tally.Add(errs)
		if len(errs) > 0 {
			pl.res.Invalid++
			return rows.StateInvalid, errs
		}
		pl.res.Valid++
		return rows.StateValid, nil
	}
	params := driver.BatchRerunParams{TenantID: pl.b.TenantID, BatchID: pl.b.ID, Actor: p.Actor, KindVersion: pl.k.version()}
	for _, c := range pl.replace {
		state, errs := check(c)
		params.Replace = append(params.Replace, driver.RerunRow{RowNo: c.row, State: state, Values: c.values, Errors: errs})
	}
	size := int64(pl.k.settings().chunkSize)
	for i, c := range pl.add {
		c.row = pl.st.maxRow + int64(i) + 1
		state, errs := check(c)
		params.Add = append(params.Add, driver.IngestRow{RowNo: c.row, ChunkNo: pl.st.maxChunk + 1 + int64(i)/size, State: state, Values: c.values, Errors: errs})
	}
	pl.res.Reparsed, pl.res.Added = int64(len(params.Replace)), int64(len(params.Add))
	if len(pl.header) != len(pl.b.Header) {
		params.Header = pl.header
	}
	params.ErrorCounts = tally.Counts()
	if params.ErrorCounts == nil {
		params.ErrorCounts = []rows.ErrorCount{} // none left: clear them
	}
	detail, err := json.Marshal(map[string]any{"source": p.SourceName, "matched_by": pl.res.MatchedBy, "kind_version": pl.k.version(),
		"reparsed": pl.res.Reparsed, "added": pl.res.Added, "valid": pl.res.Valid, "invalid": pl.res.Invalid, "kept": pl.res.Kept})
	if err != nil {
		return nil, err
	}
	params.Detail = detail
	if err := pl.conventions(&params, conv); err != nil {
		return nil, err
	}
	b, err := pl.e.store.BatchRerun(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("re-run batch %d: %w", pl.b.ID, err)
	}
	pl.res.Batch = b
	pl.e.logger.InfoContext(ctx, "batch re-run", "batch_id", b.ID, "reparsed", pl.res.Reparsed, "added", pl.res.Added, "kept", pl.res.Kept)
	pl.e.bell.ring()
	return pl.res, nil
}

// conventions sets the batch's new conventions on a re-run that changes
// them, and records the old and the new in its history's detail.
func (pl *rerunPlan) conventions(params *driver.BatchRerunParams, conv rows.Conventions) error {
	old, err := json.Marshal(pl.b.Conventions)
	if err != nil {
		return err
	}
	changed, err := json.Marshal(conv)
	if err != nil {
		return err
	}
	if string(old) == string(changed) {
		return nil
	}
	params.Conventions = &conv
	if ws := rerunWarnings(pl.b.Warnings, pl.asked, pl.mb); !slices.EqualFunc(ws, pl.b.Warnings, func(a, b batchtype.Warning) bool { return a.Message == b.Message }) {
		params.Warnings = &ws
	}
	var detail map[string]any
	if err := json.Unmarshal(params.Detail, &detail); err != nil {
		return err
	}
	detail["conventions"] = map[string]json.RawMessage{"old": old, "new": changed}
	params.Detail, err = json.Marshal(detail)
	return err
}

// rerunWarnings are a batch's warnings after a re-run that declared d and
// maps the batch's header as mb: a warning that names an option the re-run
// declared is settled and goes (a decimal comma column, with a locale
// declared); the unknown columns are those of the new mapping (a column
// now mapped, or ignored, is no longer one). The others stay: they are
// about the file (an example row, cells not kept).
func rerunWarnings(old []batchtype.Warning, d rows.Conventions, mb *rows.Mapping) []batchtype.Warning {
	settles := map[rows.Option]bool{
		rows.OptionLocale:       d.Number.Decimal != 0 || len(d.Number.Groups) > 0,
		rows.OptionDecimalComma: d.Number.Decimal != 0 || len(d.Number.Groups) > 0,
		rows.OptionDateOrder:    d.DateOrder != rows.DateOrderUnknown,
		rows.OptionDateFormat:   d.DateFormat != "",
		rows.OptionMap:          len(d.Renames) > 0,
		rows.OptionIgnore:       len(d.Ignore) > 0,
	}
	var out []batchtype.Warning
	for _, w := range old {
		if strings.HasPrefix(w.Message, unknownColumnsPrefix) ||
			slices.ContainsFunc(w.Hints, func(h rows.Hint) bool { return settles[h.Option] }) {
			continue
		}
		out = append(out, w)
	}
	if len(mb.Unknown) > 0 {
		out = append(out, unknownColumnsWarning(mb.Unknown))
	}
	return out
}

// relabel moves a file row's read errors to the row it replaces.
func relabel(errs []rows.FieldError, row int64) []rows.FieldError {
	if len(errs) == 0 {
		return nil
	}
	out := slices.Clone(errs)
	for i := range out {
		out[i].Row = row
	}
	return out
}
