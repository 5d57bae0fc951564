package storesql

import (
	"context"
	"fmt"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/rows"
)

var _ driver.StatsStore = (*Store)(nil)

// RowTotals sums every count group in one aggregate over
// batch_count_groups: a scrape reads one row per hundred chunks, never the
// rows themselves. The
// statement is expanded per call rather than kept with the others, as
// scrapes are seconds apart and it is a few string replacements.
func (s *Store) RowTotals(ctx context.Context) (rows.Counts, error) {
	dests, counts := CountDests()
	if err := s.drv.DB().QueryRow(ctx, s.d.Expand(`SELECT `+SumColumns()+` FROM {t}batch_count_groups`)).Scan(dests...); err != nil {
		return nil, fmt.Errorf("row totals: %w", err)
	}
	return counts(), nil
}
