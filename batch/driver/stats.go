package driver

import (
	"context"

	"github.com/rowfate/rowfate/rows"
)

// StatsStore is what an operator's metrics read of a store: totals over
// every tenant, each from one aggregate, cheap enough to run at every
// scrape. Both stores implement it; store/storetest checks them.
type StatsStore interface {
	// RowTotals counts every batch's rows by state: the sum of the
	// count groups, which are always overwritten from their chunks and
	// those from their rows, so no batch_rows scan is needed.
	RowTotals(ctx context.Context) (rows.Counts, error)
}
