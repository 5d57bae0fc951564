package batch

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// ImportParams describe one file to import.
type ImportParams struct {
	// TenantID owns the batch. Defaults to DefaultTenant.
	TenantID string
	// Kind is a registered kind's name.
	Kind string
	// SourceName names the source in errors and in the batch (a file name).
	SourceName string
	// Source is read once, streaming.
	Source io.Reader
	// Format names the source's format as package fileformat knows it
	// (FormatCSV, FormatXLSX). Defaults to detection from the source's
	// first bytes and name (fileformat.Detect): a zip or OLE signature, or
	// an .xlsx/.xls name, is XLSX; anything else CSV.
	Format Format
	// Read is what the user told the reader: encoding and delimiter (CSV),
	// sheet and header row (XLSX), limits. The zero value detects.
	Read rows.ReadOptions
	// Conventions are what the user declares about the file: its number
	// format (batchctl --decimal-comma, --locale), its day/month order
	// (--date-order) and column renames (--map). What they leave open is
	// settled from the file's own values, never guessed, and the result
	// is kept with the batch.
	Conventions rows.Conventions
	// Strict rejects a file with a column the kind does not know or
	// without one of its optional columns (batchctl --strict).
	Strict bool
	// IdempotencyKey makes the import happen once: a second import with
	// the same key, content and options returns the first batch (Reused);
	// the same key with other content or other options is ErrKeyReused. Without one, the
	// key is the import's own (see NewBatch).
	IdempotencyKey string
	// Once is what every import without NewBatch does now; it is kept
	// for callers that set it.
	Once bool
	// NewBatch imports the source as a new batch. Without it an import
	// is keyed by what it is — the tenant, the kind, the content's digest
	// and the options the caller gave (Read, Conventions, Strict) — so
	// importing the same file again returns the batch it made (Reused)
	// instead of running its rows, and their effects, a second time. It
	// also imports an error report of one of the tenant's batches as a
	// new batch; without it, such an import is a *ReportError, and the
	// caller re-runs that batch with the file (Engine.Rerun).
	NewBatch bool
	// MaxInvalid rejects the file whole, nothing written, when more of its
	// rows than this are invalid (ErrTooManyInvalid, a *rows.FileError):
	// a client file that is 40% wrong is sent back, not half imported.
	// The zero value is no bound.
	MaxInvalid Threshold
	// MaxFailed pauses the batch, with an event and a webhook, once more
	// of its rows to work than this have failed or died
	// (batchtype.FailureBound): a processor failing every row stops
	// before it has run them all. Defaults to the kind's; the zero value
	// is no bound. Engine.Limit changes it while the batch runs.
	MaxFailed Threshold
	// WorkInline works the valid rows of a transactional kind (its
	// Processor a TxProcessor, its effects not keyed) while they are
	// stored, in the import's own transaction: each row is written once,
	// with its outcome, and a batch whose rows all got one is finished
	// when Import returns. Its writes commit with the rows or not at
	// all: an import that fails or is cut off leaves no effect behind.
	// What cannot be settled there is left valid for Work, as without
	// it: a chunk whose processor call fails as a whole (and the rest of
	// the file after it), a row that may repeat an earlier row's key
	// until the store has checked, and the rows after the failures pass
	// the batch's bound (its first flush pauses it). It is ignored for
	// other kinds and while the kind or the tenant is paused. One
	// transaction works the whole file: a caller that wants many
	// workers on the rows leaves it off. On PostgreSQL a second
	// connection writes the rows beside it, and other processes see the
	// batch ingesting, with its ingest_progress events, while the file
	// is read. On SQLite the import holds the database's write lock
	// until it commits (other processes wait), and writes no
	// ingest_progress events.
	WorkInline bool
	// ProgressFunc, when set, is told how far the import has got while it
	// reads the file: during the first pass (BatchID 0), at once when the
	// batch exists (its id, before any row is stored: batchctl prints it
	// then), and then at most every ProgressInterval and after each
	// ingest_progress event the import writes. It is called from one
	// goroutine of the engine, one call at a time, never after Import
	// returns; it must not block long.
	ProgressFunc func(IngestProgress)
	// ProgressInterval bounds how often ProgressFunc is called (a
	// terminal's redraw). Defaults to 250ms; at least 50ms.
	ProgressInterval time.Duration
	// EventInterval bounds how often the import appends an
	// ingest_progress event to the batch's log while it reads the file,
	// for watchers in any process. Defaults to 2s; at least 50ms.
	EventInterval time.Duration
}

// ReportError is the error of an import of an error report that names one
// of the tenant's batches of the same kind: the fixed report belongs to
// that batch, as a re-run (Engine.Rerun), so that the rows it completed
// are kept and matched (importing it as a new batch would run again what
// the first batch did). ImportParams.NewBatch imports it as a new batch.
type ReportError struct {
	SourceName string
	BatchID    int64
}

func (e *ReportError) Error() string {
	return fmt.Sprintf("%s is the error report of batch %d: re-run that batch with it, or import it as a new batch", e.SourceName, e.BatchID)
}

// Format names a file format of an import or an export, as package
// fileformat knows it: the formats and their names are fileformat's.
type Format = string

// The formats' names.
const (
	FormatCSV  = fileformat.CSV
	FormatXLSX = fileformat.XLSX
)

// OpenReader opens the reader an import of p would use, detecting the
// format (by content, then name) when p has none: for a preview, or any
// caller that wants to read a source the way the engine does. src must be
// buffered so that the detection can peek. Close the reader when done: a
// workbook reader holds temporary files.
func OpenReader(src *bufio.Reader, p ImportParams) (rows.Reader, error) {
	return openReader(src, p)
}

// OpenReader opens the reader an import of p would use, as the package
// function does, and finds the header the way an import of p.Kind does
// (the first row, among the first 20, with the kind's required columns).
func (r *Registry) OpenReader(src *bufio.Reader, p ImportParams) (rows.Reader, error) {
	if k, err := r.lookup(p.Kind); err == nil {
		s := &source{p: p, k: k}
		p.Read.HeaderFunc, p.Read.HeaderHint = s.headerFunc()
	}
	return openReader(src, p)
}

func openReader(src *bufio.Reader, p ImportParams) (rows.Reader, error) {
	r, err := fileformat.Open(src, p.SourceName, p.Format, p.Read)
	if errors.Is(err, fileformat.ErrUnknown) {
		return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
	}
	return r, err
}

// Import reads a CSV or XLSX source, validates every row in the kind's
// fixed phases and stores all rows with their outcome in one transaction.
// It returns the new batch; its valid rows are then worked by Work.
//
// The source is read twice, streaming: once to settle what no single cell
// says (see ImportParams.Conventions), once to check and store the rows.
// A source that cannot be read (no header, a missing required column, a
// malformed line) is a *rows.FileError and leaves no batch behind.
func (e *Engine) Import(ctx context.Context, p ImportParams) (*batchtype.Batch, error) {
	k, err := e.registry.lookup(p.Kind)
	if err != nil {
		return nil, err
	}
	if e.registry.IsRecalc(p.Kind) {
		return nil, fmt.Errorf("import %s: kind %s is a recalculation: its rows come from its source (Engine.Recalc)", p.SourceName, p.Kind)
	}
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	if err := k.beforeImport(ctx); err != nil {
		return nil, fmt.Errorf("import %s as %s: %w", p.SourceName, p.Kind, err)
	}
	ctx, track, stop := e.trackIngest(ctx, p)
	defer stop()
	src, err := prepareTracked(ctx, k, p, track)
	if err != nil {
		return nil, importError(p, err)
	}
	defer src.close()
	key, lookup := importKey(p, src.digest)
	if b, err := e.earlier(ctx, p, src, lookup); b != nil || err != nil {
		return b, err
	}
	track.restart()
	r, err := src.open(nil)
	if err != nil {
		return nil, importError(p, err)
	}
	defer r.Close()
	if err := e.reportCheck(ctx, p, src, r.Info()); err != nil {
		return nil, err
	}
	m, err := src.mapping(r)
	if err != nil {
		return nil, err
	}
	project(r, m)
	pipe, err := e.newIngestPipe(ctx, k, p, src, r, m, track)
	if err != nil {
		return nil, err
	}
	// After the store's ingest, which reads every row it is handed (or
	// stops the reading goroutine) before it returns.
	defer pipe.screen.close()
	params, started := ingestParams(k, p, src, r, pipe, track, key)
	b, err := e.store.BatchIngest(ctx, params)
	if errors.Is(err, ErrConflict) {
		// Another import with the same key committed first.
		if b, err := e.earlier(ctx, p, src, key); b != nil || err != nil {
			return b, err
		}
		if !started.Load() {
			// That import failed, or its importer died, before this one
			// read a row: this one makes the batch.
			b, err = e.store.BatchIngest(ctx, params)
		}
	}
	if err != nil && !errors.As(err, new(*rows.FileError)) && !errors.Is(err, ErrConflict) {
		// The commit's answer may have been lost (a dropped connection):
		// the batch exists if its key does. Reporting a failure then
		// would make the user import it again.
		if b := e.committedAnyway(ctx, p, src, key); b != nil {
			return b, nil
		}
	}
	if err != nil {
		err = track.why(err)
		return nil, importError(p, err)
	}
	pipe.inline.committed(b.Kind)
	e.logger.InfoContext(ctx, "batch imported", "batch_id", b.ID, "kind", b.Kind, "tenant_id", b.TenantID, "rows", b.Counts.Total())
	e.bell.ring()
	return b, nil
}

// ingestParams are what an import hands the store. started is set once
// the store begins to read the rows: until then the ingest can be tried
// again with the same parameters.
func ingestParams(k kind, p ImportParams, src *source, r rows.Reader, pipe *ingestPipe, track *ingestTracker, key string) (driver.BatchIngestParams, *atomic.Bool) {
	chk, inline := pipe.chk, pipe.inline
	started := new(atomic.Bool)
	return driver.BatchIngestParams{
		TenantID:       p.TenantID,
		Kind:           p.Kind,
		SourceName:     p.SourceName,
		Header:         r.Header(),
		Warnings:       src.warnings,
		Conventions:    src.conv,
		IdempotencyKey: key,
		OptionsDigest:  optionsDigest(p),
		MaxAttempts:    k.settings().maxAttempts,
		MaxFailed:      pipe.maxFailed,
		SourceDigest:   src.digest,
		KindVersion:    k.version(),
		KindDefinition: k.definition(),
		Rows: func(yield func(driver.IngestRow, error) bool) {
			started.Store(true)
			pipe.seq(yield)
		},
		DuplicateKey: pipe.screen.duplicateKey(chk.duplicateKey()),
		WorkFunc:     inline.workFunc(),
		AcceptFunc:   pipe.accept,
		CreatedFunc:  track.createdBatch,
		ShownFunc:    track.shown,
		SummaryFunc: func() driver.IngestSummary {
			sum := driver.IngestSummary{SourceDigest: src.digest, SkippedEmpty: r.SkippedEmpty(), ErrorCounts: chk.tally.Counts(), Width: src.width}
			if pipe.trimmed > 0 {
				sum.Warnings = append(sum.Warnings, batchtype.Warning{Message: fmt.Sprintf(
					"%d rows carried more than %d KiB in columns %s does not read: those cells were not kept (the error report leaves them empty)",
					pipe.trimmed, unreadCellsKept>>10, p.Kind)})
			}
			return sum
		},
	}, started
}

// ingestPipe is how an import's rows go from its reader to the store: read
// and checked (ingestRows), their keys screened, counted for the progress
// and for MaxInvalid, and, with inline work, read ahead.
type ingestPipe struct {
	seq       iter.Seq2[driver.IngestRow, error]
	chk       *rowChecker
	screen    *keyScreen
	inline    *inlineWork
	accept    func(duplicates int64) error
	maxFailed Threshold
	// trimmed counts the rows whose unread cells were not kept.
	trimmed int64
}

func (e *Engine) newIngestPipe(ctx context.Context, k kind, p ImportParams, src *source, r rows.Reader, m *rows.Mapping, track *ingestTracker) (*ingestPipe, error) {
	pipe := &ingestPipe{chk: newRowChecker(k, m), maxFailed: cmp.Or(p.MaxFailed, k.settings().maxFailed)}
	var err error
	if pipe.inline, err = e.inlineFor(ctx, k, m, p, pipe.maxFailed, src.rowCount); err != nil {
		return nil, err
	}
	pipe.screen = newKeyScreen(k.hasKey(), cmp.Or(e.keyFilterRows, src.rowCount), cmp.Or(e.maxHeld, maxHeld))
	seq := ingestRows(ctx, r, src, m, pipe.chk, int64(k.settings().chunkSize), &pipe.trimmed, pipe.screen)
	seq = track.count(seq)
	if pipe.inline != nil {
		pipe.inline.screen = pipe.screen
		track.quiet.Store(true)
	}
	maxInvalid := cmp.Or(p.MaxInvalid, k.settings().maxInvalid)
	if !maxInvalid.IsZero() {
		bound := &invalidBound{max: maxInvalid, name: p.SourceName}
		seq, pipe.accept = bound.count(seq), bound.accept
	}
	if pipe.inline != nil {
		seq = readAhead(seq, readAheadRows)
	}
	pipe.seq = seq
	return pipe, nil
}

// importKey returns the idempotency key an import's batch is stored
// under, and the key to look an earlier batch up by ("" for none).
func importKey(p ImportParams, digest string) (key, lookup string) {
	key = p.IdempotencyKey
	switch {
	case key != "":
	case !p.NewBatch:
		key = sameImportKey(p, digest)
	default:
		// A new batch gets a key of its own all the same: after an
		// ambiguous commit it is how this import finds its batch.
		key = "new:" + p.Kind + ":" + digest + ":" + rand.Text()
	}
	lookup = key
	if p.NewBatch && p.IdempotencyKey == "" {
		lookup = "" // a new batch: only a warning names the batch it repeats
	}
	return key, lookup
}

// ingestRows reads r's records as the rows the store ingests, checked
// (every validation phase, the natural key's digest), numbered into
// chunks of chunkSize, the template's example rows left out; trimmed
// counts the rows whose unread cells were not kept.
func ingestRows(ctx context.Context, r rows.Reader, src *source, m *rows.Mapping, chk *rowChecker, chunkSize int64, trimmed *int64, screen *keyScreen) iter.Seq2[driver.IngestRow, error] {
	return func(yield func(driver.IngestRow, error) bool) {
		var n int64
		for rec, err := range src.records(ctx, r) {
			if err != nil {
				yield(driver.IngestRow{}, err)
				return
			}
			row := driver.IngestRow{RowNo: rec.Row, ChunkNo: n / chunkSize, State: rows.StateValid, Values: rec.Values}
			errs, digest := chk.checkStored(ctx, rec)
			if len(errs) > 0 {
				row.State, row.Errors = rows.StateInvalid, errs
			}
			row.KeyDigest = digest
			screen.add(row.RowNo, digest)
			var cut bool
			if row.Values, cut = keptCells(m, rec.Values); cut || rec.Trimmed {
				*trimmed++
			}
			n++
			if !yield(row, nil) {
				return
			}
		}
	}
}

// invalidBound counts an ingest's invalid rows against
// ImportParams.MaxInvalid: those the rows carry, then the duplicates the
// store finds when every row is written (accept).
type invalidBound struct {
	max            Threshold
	name           string
	invalid, total int64
}

// count passes seq's rows on, counting them.
func (b *invalidBound) count(seq iter.Seq2[driver.IngestRow, error]) iter.Seq2[driver.IngestRow, error] {
	return func(yield func(driver.IngestRow, error) bool) {
		for row, err := range seq {
			if err == nil {
				b.total++
				if row.State == rows.StateInvalid {
					b.invalid++
				}
			}
			if !yield(row, err) || err != nil {
				return
			}
		}
	}
}

// accept fails the ingest, so that nothing of it is kept, when the
// invalid rows and the duplicates pass the bound.
func (b *invalidBound) accept(duplicates int64) error {
	if bad := b.invalid + duplicates; b.max.Exceeded(bad, b.total) {
		return tooManyInvalid(b.name, bad, b.total, b.max)
	}
	return nil
}

// committedAnyway looks, after an ingest failed, for the batch the ingest
// wrote under key: found, the failure was the answer to a commit that
// went through. It tries for a while (the database may be restarting),
// on a context of its own (the caller's may be what was cut off), and
// finds only an accepted batch.
func (e *Engine) committedAnyway(ctx context.Context, p ImportParams, src *source, key string) *batchtype.Batch {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), committedLookup)
	defer cancel()
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		b, err := e.store.BatchFind(lctx, driver.BatchFindParams{TenantID: p.TenantID, IdempotencyKey: key})
		switch {
		case err == nil && b.SourceDigest == src.digest && b.Kind == p.Kind && b.OptionsDigest == optionsDigest(p) && b.Status != "ingesting":
			e.logger.WarnContext(ctx, "the import's commit was not acknowledged, but its batch exists", "batch_id", b.ID, "source", p.SourceName)
			e.bell.ring()
			return b
		case err == nil, errors.Is(err, ErrNotFound):
			return nil
		}
		select {
		case <-lctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

// committedLookup bounds committedAnyway.
const committedLookup = 30 * time.Second

// unreadCellsKept is how many bytes of the cells a kind does not read a
// stored row keeps.
const unreadCellsKept = 4 << 10

// keptCells are the cells of a row an import stores. A row keeps every
// cell, unless the ones its kind does not read (unknown columns, cells
// past the header) hold more than unreadCellsKept bytes: then those are
// stored empty, and cut is true. Every stored cell is read back by the
// worker that claims its chunk: a file of 300 rows that carried a
// megabyte each in columns the kind ignores took 614 MB to import and
// 603 MB to work. A reader that projects (rows.Projector) has already
// left those cells out, by the same rule, and says so (Trimmed).
func keptCells(m *rows.Mapping, cells []string) (kept []string, cut bool) {
	unread := 0
	for i, c := range cells {
		if !m.Feeds(i) {
			unread += len(c)
		}
	}
	if unread <= unreadCellsKept {
		return cells, false
	}
	// Copies: a reader's cells may be slices of one string holding the
	// whole line, which a kept cell would keep alive with it.
	kept = make([]string, len(cells))
	for i, c := range cells {
		if m.Feeds(i) {
			kept[i] = strings.Clone(c)
		}
	}
	return kept, true
}

// reportCheck refuses, unless NewBatch, the import of an error report of
// one of the tenant's batches of the kind; a report of a batch the tenant
// does not have (or of another kind) is imported with a warning.
func (e *Engine) reportCheck(ctx context.Context, p ImportParams, src *source, info rows.SourceInfo) error {
	id, ok := ReportOf(info)
	if !ok {
		return nil
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: id})
	switch {
	case errors.Is(err, ErrNotFound):
		src.warn("this file is the error report of batch %d, which this tenant does not have: imported as a new batch", id)
		return nil
	case err != nil:
		return fmt.Errorf("import %s: %w", p.SourceName, err)
	case b.Kind != p.Kind:
		src.warn("this file is the error report of batch %d, of kind %s: imported as a new batch of %s", id, b.Kind, p.Kind)
		return nil
	case p.NewBatch:
		src.warn("this file is the error report of batch %d, imported as a new batch (rows that batch completed may run again)", id)
		return nil
	}
	return &ReportError{SourceName: p.SourceName, BatchID: id}
}

// importError keeps a *rows.FileError as it is (it names the file and
// line) and names the source in any other error.
func importError(p ImportParams, err error) error {
	var fe *rows.FileError
	if errors.As(err, &fe) {
		return fe
	}
	return fmt.Errorf("import %s: %w", p.SourceName, err)
}

// earlier looks for a batch this import repeats. With an idempotency key,
// the batch of that key is returned (Reused) when its content is the same,
// and ErrKeyReused when not. Without one (NewBatch), a batch of the same
// kind and content only earns a warning on the new batch.
func (e *Engine) earlier(ctx context.Context, p ImportParams, src *source, key string) (*batchtype.Batch, error) {
	if key != "" {
		b, err := e.store.BatchFind(ctx, driver.BatchFindParams{TenantID: p.TenantID, IdempotencyKey: key})
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
		}
		if b, err = e.awaitIngest(ctx, p, key, b); b == nil || err != nil {
			return nil, err
		}
		switch {
		case b.SourceDigest != src.digest || b.Kind != p.Kind:
			return nil, fmt.Errorf("import %s: %w: batch %d was imported with key %q from other content", p.SourceName, ErrKeyReused, b.ID, key)
		case b.OptionsDigest != optionsDigest(p):
			// The same file read another way makes other rows: answering
			// the batch of the first options would say they were taken.
			return nil, fmt.Errorf("import %s: %w: batch %d was imported with key %q and other options", p.SourceName, ErrKeyReused, b.ID, key)
		}
		b.Reused = true
		return b, nil
	}
	b, err := e.store.BatchFind(ctx, driver.BatchFindParams{TenantID: p.TenantID, Kind: p.Kind, SourceDigest: src.digest})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
	}
	at := b.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")
	if b.Export {
		// The file is one this tenant exported: the batch wrote it.
		src.warn("this file was exported as batch %d on %s; it was imported as a new batch, as asked", b.ID, at)
		return nil, nil
	}
	src.warn("this file was already imported as batch %d on %s; it was imported again as a new batch, as asked", b.ID, at)
	return nil, nil
}

// awaitIngest waits, when b is still ingesting (another import of the
// same file under the same key is reading it), for that ingest to end.
// It returns b once accepted, or nil when the ingest failed and removed
// it, or its importer died (its lease ran out: b is removed here), so
// that this import makes the batch: answering a batch that is about to
// vanish would leave a retry after a crash with nothing.
func (e *Engine) awaitIngest(ctx context.Context, p ImportParams, key string, b *batchtype.Batch) (*batchtype.Batch, error) {
	if b.Status == batchtype.StatusIngesting {
		e.logger.WarnContext(ctx, "another import of the same file with the same options is reading it: waiting for its outcome",
			"batch_id", b.ID, "source", p.SourceName)
	}
	for delay := 50 * time.Millisecond; b.Status == batchtype.StatusIngesting; delay = min(2*delay, time.Second) {
		removed, err := e.store.IngestAbandoned(ctx, driver.BatchGetParams{TenantID: p.TenantID, ID: b.ID})
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
		}
		if removed {
			e.logger.WarnContext(ctx, "an import of the same file died while it read it; its batch was removed", "batch_id", b.ID, "source", p.SourceName)
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("import %s: waiting for batch %d, which another import of it is reading: %w", p.SourceName, b.ID, context.Cause(ctx))
		case <-time.After(delay):
		}
		b, err = e.store.BatchFind(ctx, driver.BatchFindParams{TenantID: p.TenantID, IdempotencyKey: key})
		if errors.Is(err, ErrNotFound) {
			return nil, nil // that import failed
		}
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
		}
	}
	return b, nil
}

// sameImportKey is the idempotency key of an import without one: the
// kind, the content's digest and, when the caller gave any, a digest of
// the options that change what the rows become. The form without options
// is the key batchctl --once has always written, so batches imported
// with it are found too.
func sameImportKey(p ImportParams, digest string) string {
	key := "once:" + p.Kind + ":" + digest
	if d := optionsDigest(p); d != "" {
		key += ":" + d
	}
	return key
}

// optionsDigest is a digest of the options of an import that change what
// its rows become, "" when it has none: stored with the batch
// (Batch.OptionsDigest), so that a caller's idempotency key used again
// with other options is refused, and part of the import's own key.
func optionsDigest(p ImportParams) string {
	opts := importOptions{Encoding: p.Read.Encoding, Delimiter: p.Read.Delimiter, Quote: p.Read.Quote, Escape: p.Read.Escape, Sheet: p.Read.Sheet, HeaderRow: p.Read.HeaderRow,
		KeepFormulaQuote: p.Read.KeepFormulaQuote, Conventions: p.Conventions, Strict: p.Strict}
	b, err := json.Marshal(opts)
	zero, _ := json.Marshal(importOptions{})
	if err != nil || string(b) == string(zero) {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// importOptions are the options of an import that change what its rows
// become, as sameImportKey digests them.
type importOptions struct {
	Encoding         string           `json:"encoding"`
	Delimiter        rune             `json:"delimiter"`
	Quote            rune             `json:"quote,omitempty"`
	Escape           rune             `json:"escape,omitempty"`
	Sheet            string           `json:"sheet"`
	HeaderRow        int64            `json:"header_row"`
	KeepFormulaQuote bool             `json:"keep_formula_quote"`
	Conventions      rows.Conventions `json:"conventions"`
	Strict           bool             `json:"strict"`
}

// headerLine is the line (CSV) or sheet row (XLSX) of a reader's header,
// for errors about the header: a sheet's header need not be its first row,
// and a text file's is reported as line 1.
func headerLine(r rows.Reader) int64 {
	if n := r.Info().HeaderRow; n > 0 {
		return n
	}
	return 1
}
