package storesql

import (
	"context"
	"fmt"
)

// valuesOf is the expression of the values of the row aliased r, of the
// batch that the statement's parameter batch names. With the values
// apart (Dialect.ValuesApart) it is the row's batch_values payload when
// there is one, else its batch_rows payload: the batches ingested before
// migration 0014 kept theirs there, and a batch whose partition was
// truncated has the JSON null there, which reads back purged.
//
// The batch is the statement's parameter, not r.batch_id: a constant
// lets the planner prune batch_values to that one partition (and lock
// only it) when it plans the statement; a reference to the outer row
// would be pruned only as it runs, after every partition was planned and
// locked.
func (d *Dialect) valuesOf(r, batch string) string {
	if !d.ValuesApart {
		return r + ".payload"
	}
	return `COALESCE((SELECT v.payload FROM {t}batch_values v WHERE v.batch_id = ` + batch + ` AND v.row_no = ` + r + `.row_no), ` + r + `.payload)`
}

// valuesStatements write the values of a batch whose values are apart.
type valuesStatements struct {
	// edit replaces one row's values.
	edit string
	// replace replaces the values of the rows a re-run's replace
	// statement changed, with the same records: one data-modifying
	// statement, so that exactly those rows get their values, and its
	// count is theirs.
	replace string
}

func newValuesStatements(d *Dialect, replaceRows string) valuesStatements {
	if !d.ValuesApart {
		return valuesStatements{}
	}
	return valuesStatements{
		edit: d.Expand(`UPDATE {t}batch_values SET payload = $4 WHERE batch_id = $1 AND row_no = $2 AND tenant_id = $3`),
		replace: d.Expand(d.WithRecords("$3", rerunColumns(d)) + `, replaced AS (` + replaceRows + ` RETURNING r.row_no)
			UPDATE {t}batch_values AS v SET payload = u.p
			FROM u JOIN replaced ON replaced.row_no = u.n
			WHERE v.batch_id = $1 AND v.tenant_id = $2 AND v.row_no = u.n`),
	}
}

// valuesApart says whether batch id keeps its values in batch_values.
func (s *Store) valuesApart(ctx context.Context, q Querier, id int64) (bool, error) {
	if !s.d.ValuesApart {
		return false, nil
	}
	apart, err := s.drv.ValuesApart(ctx, q, id)
	if err != nil {
		return false, fmt.Errorf("find values of batch %d: %w", id, err)
	}
	return apart, nil
}
