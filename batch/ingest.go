package batch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

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

func openReader(src *bufio.Reader, p ImportParams) (rows.Reader, error) {
	r, err := fileformat.Open(src, p.SourceName, p.Format, p.Read)
	if errors.Is(err, fileformat.ErrUnknown) {
		return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
	}
	return r, err
}

// Import reads a CSV or XLSX source streaming, validates every row in the kind's
// fixed phases and stores all rows with their outcome in one transaction.
// It returns the new batch; its valid rows are then worked by Work.
//
// A source that cannot be read (no header, a missing required column, a
// malformed line) is a *rows.FileError and leaves no batch behind.
func (e *Engine) Import(ctx context.Context, p ImportParams) (*Batch, error) {
	k, err := e.registry.lookup(p.Kind)
	if err != nil {
		return nil, err
	}
	if p.TenantID == "" {
		p.TenantID = DefaultTenant
	}
	h := sha256.New()
	// The digest is taken over the raw bytes as they are read, whatever
	// the reader does with them (the XLSX reader copies them to a file).
	r, err := openReader(bufio.NewReader(io.TeeReader(p.Source, h)), p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m, err := k.mapHeader(r.Header())
	if err != nil {
		line := headerLine(r)
		return nil, &rows.FileError{File: p.SourceName, Line: line, Err: err}
	}
	chunkSize := int64(k.settings().chunkSize)
	chk := newRowChecker(k, m)

	seq := func(yield func(IngestRow, error) bool) {
		var n int64
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(IngestRow{}, err)
				return
			}
			if err := ctx.Err(); err != nil {
				yield(IngestRow{}, err)
				return
			}
			row := IngestRow{RowNo: rec.Row, ChunkNo: n / chunkSize, State: rows.StateValid, Values: rec.Values}
			if errs := chk.check(ctx, rec); len(errs) > 0 {
				row.State, row.Errors = rows.StateInvalid, errs
			}
			n++
			if !yield(row, nil) {
				return
			}
		}
	}
	b, err := e.store.BatchIngest(ctx, BatchIngestParams{
		TenantID:   p.TenantID,
		Kind:       p.Kind,
		SourceName: p.SourceName,
		Header:     r.Header(),
		Warnings:   unknownWarning(m),
		Rows:       seq,
		SummaryFunc: func() IngestSummary {
			// Drain what the CSV reader left unread (trailing bytes) so the
			// digest covers the whole source.
			_, _ = io.Copy(io.Discard, io.TeeReader(p.Source, h))
			return IngestSummary{SourceDigest: hex.EncodeToString(h.Sum(nil)), SkippedEmpty: r.SkippedEmpty(), ErrorCounts: chk.tally.Counts()}
		},
	})
	var fe *rows.FileError
	if errors.As(err, &fe) {
		return nil, fe // it names the file and line already
	}
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", p.SourceName, err)
	}
	e.logger.InfoContext(ctx, "batch imported", "batch_id", b.ID, "kind", b.Kind, "tenant_id", b.TenantID, "rows", b.Counts.Total())
	return b, nil
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
