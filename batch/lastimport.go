package batch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rowfate/rowfate/batchtype"
)

// LastImportParams name a file's header, to find the conventions a
// tenant imported the same kind of file with before.
type LastImportParams struct {
	TenantID string
	Kind     string
	// Header is the file's header as read (cells compared trimmed, as
	// spelled: a renamed or reordered column is another file).
	Header []string
}

// lastImportScan is how many of a tenant's newest batches of the kind
// LastImport looks at: the mapping a person keeps choosing is in the
// recent ones, and the list has no index on the header.
const lastImportScan = 500

// LastImport returns the tenant's newest batch of the kind whose file had
// the same header, so that a front end can offer its conventions (the
// column mapping, the columns ignored, the number and date formats) for
// the next file of that shape; ErrNotFound when none of its
// lastImportScan newest batches of the kind has.
func (e *Engine) LastImport(ctx context.Context, p LastImportParams) (*batchtype.Batch, error) {
	want := trimmed(p.Header)
	var before int64
	for seen := 0; seen < lastImportScan; {
		page, err := e.Batches(ctx, BatchesParams{TenantID: p.TenantID, Kind: p.Kind, BeforeID: before, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, b := range page {
			if slices.Equal(trimmed(b.Header), want) {
				return b, nil
			}
		}
		if len(page) < 100 {
			break
		}
		seen += len(page)
		before = page[len(page)-1].ID
	}
	return nil, fmt.Errorf("no earlier %s import with this header: %w", p.Kind, ErrNotFound)
}

func trimmed(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.TrimSpace(c)
	}
	return out
}
