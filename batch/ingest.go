package batch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/rowfate/rowfate/rows"
)

// ImportParams describe one file to import.
type ImportParams struct {
	// TenantID owns the batch. Defaults to "default".
	TenantID string
	// Kind is a registered kind's name.
	Kind string
	// SourceName names the source in errors and in the batch (a file name).
	SourceName string
	// Source is read once, streaming.
	Source io.Reader
	// CSV tunes the CSV reader.
	CSV *rows.CSVOptions
}

// Import reads a CSV source streaming, validates every row in the kind's
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
		p.TenantID = "default"
	}
	h := sha256.New()
	r, err := rows.NewCSVReader(io.TeeReader(p.Source, h), p.SourceName, p.CSV)
	if err != nil {
		return nil, err
	}
	m, err := k.mapHeader(r.Header())
	if err != nil {
		return nil, &rows.FileError{File: p.SourceName, Line: 1, Err: err}
	}
	chunkSize := int64(k.settings().chunkSize)

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
			if errs := k.validate(ctx, m, rec); len(errs) > 0 {
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
		Rows:       seq,
		SummaryFunc: func() IngestSummary {
			// Drain what the CSV reader left unread (trailing bytes) so the
			// digest covers the whole source.
			_, _ = io.Copy(io.Discard, io.TeeReader(p.Source, h))
			return IngestSummary{SourceDigest: hex.EncodeToString(h.Sum(nil)), SkippedEmpty: r.SkippedEmpty()}
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
