package storesql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

// whereCond compiles a filter's Where (driver.RowFilter) for batch id into
// a condition on the row aliased r, " AND (...)", with its parameters
// numbered from each of firsts: one condition per numbering, the same
// parameters. batch is the statement's parameter that names the batch.
//
// The cells are the row's values, a JSON array of strings by header
// index: a missing element, a short row's, is NULL. A batch whose values
// are apart (Dialect.ValuesApart) holds every row's in its partition of
// batch_values, read through an EXISTS on the batch's partition (pruned
// when planned, as valuesOf's); the others hold them in r.payload.
func (s *Store) whereCond(ctx context.Context, q Querier, tenant string, id int64, f driver.RowFilter, batch string, firsts ...int) ([]string, []any, error) {
	var (
		header   string
		purgedAt Time
		by       sql.NullString
	)
	err := q.QueryRow(ctx, s.b.whereBatch, id, tenant).Scan(&header, &purgedAt, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("batch %d: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("batch %d: %w", id, err)
	}
	if purgedAt.Valid {
		return nil, nil, &batchtype.ValuesPurgedError{BatchID: id, At: purgedAt.Time, By: by.String, What: "a where"}
	}
	var cells []string
	if err := json.Unmarshal([]byte(header), &cells); err != nil {
		return nil, nil, fmt.Errorf("batch %d header: %w", id, err)
	}
	apart, err := s.valuesApart(ctx, q, id)
	if err != nil {
		return nil, nil, err
	}
	values := "r.payload"
	if apart {
		values = "v.payload"
	}
	cell := func(i int) string { return "(" + values + "->>" + strconv.Itoa(i) + ")" }
	if payloadType(s.d) == "text" {
		cell = func(i int) string { return "json_extract(" + values + ", '$[" + strconv.Itoa(i) + "]')" }
	}
	e, err := f.ParseWhere(driver.WhereColumns(cells, cell))
	if err != nil {
		return nil, nil, fmt.Errorf("batch %d: %w", id, err)
	}
	conds := make([]string, len(firsts))
	var args []any
	for i, first := range firsts {
		var c string
		c, args = e.SQL(batchtype.Dialect(s.d.Engine), first)
		if apart {
			c = s.d.Expand(`EXISTS (SELECT 1 FROM {t}batch_values v WHERE v.batch_id = ` + batch + ` AND v.row_no = r.row_no AND ` + c + `)`)
		}
		conds[i] = " AND " + c
	}
	return conds, args, nil
}

// filteredWhere are RowsBulk's statements with the filter's Where, and
// its parameters.
func (s *Store) filteredWhere(ctx context.Context, tenant string, id int64, f driver.RowFilter) (filtered, []any, error) {
	conds, args, err := s.whereCond(ctx, s.drv.DB(), tenant, id, f, "$1", 6, 8)
	if err != nil {
		return filtered{}, nil, err
	}
	return newFiltered(s.d, conds[0], conds[1]), args, nil
}
