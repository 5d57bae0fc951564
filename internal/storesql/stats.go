package storesql

import (
	"context"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

var _ driver.StatsStore = (*Store)(nil)

// RowTotals sums every chunk's counts in one aggregate over batch_chunks:
// a scrape reads one row per chunk, never the rows themselves. The
// statement is expanded per call rather than kept with the others, as
// scrapes are seconds apart and it is a few string replacements.
func (s *Store) RowTotals(ctx context.Context) (rows.Counts, error) {
	dests, counts := CountDests()
	if err := s.drv.DB().QueryRow(ctx, s.d.Expand(`SELECT `+SumColumns()+` FROM {t}batch_chunks`)).Scan(dests...); err != nil {
		return nil, fmt.Errorf("row totals: %w", err)
	}
	return counts(), nil
}
