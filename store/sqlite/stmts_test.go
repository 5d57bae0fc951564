package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/store/internal/storesql"
)

// TestTxPreparedStatements: the long statements of a transaction are
// prepared once and kept, at most maxPrepared of them; past that they
// run unprepared, and every one answers as it would unprepared.
func TestTxPreparedStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var kept *txStmts
	err = s.driver().InTx(ctx, func(q storesql.Querier) error {
		kept = q.(querier).stmts
		for round := range 2 {
			for n := preparedArgs - 1; n < preparedArgs+maxPrepared+3; n++ {
				query := "SELECT ?" + strings.Repeat(" + ?", n-1)
				args := make([]any, n)
				for i := range args {
					args[i] = i + round
				}
				want := n*(n-1)/2 + n*round
				rs, err := q.Query(ctx, query, args...)
				if err != nil {
					return err
				}
				var got int
				if !rs.Next() {
					return fmt.Errorf("%d arguments: no row: %v", n, rs.Err())
				}
				if err := rs.Scan(&got); err != nil {
					return err
				}
				rs.Close()
				if got != want {
					return fmt.Errorf("%d arguments: %d, want %d", n, got, want)
				}
				if _, err := q.Exec(ctx, query, args...); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.byQuery) != maxPrepared {
		t.Fatalf("%d statements kept, want %d", len(kept.byQuery), maxPrepared)
	}
	for query := range kept.byQuery {
		if strings.Count(query, "?") < preparedArgs {
			t.Fatalf("a statement of %d arguments was kept", strings.Count(query, "?"))
		}
	}
}
