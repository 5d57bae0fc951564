package schemarecalc_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/processors/schemarecalc"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

type env struct {
	store batch.Store
	db    *sql.DB
	cfg   schemarecalc.Config
	reg   *batch.Registry
	eng   *batch.Engine
}

func envs() map[string]func(t *testing.T) *env {
	return map[string]func(t *testing.T) *env{
		"SQLite": func(t *testing.T) *env {
			s := teststore.SQLite(t)
			return newEnv(t, s, s.DB(), schemarecalc.SQLite)
		},
		"PostgreSQL": func(t *testing.T) *env {
			s := teststore.Postgres(t)
			db := stdlib.OpenDBFromPool(s.Pool())
			t.Cleanup(func() { db.Close() })
			return newEnv(t, s, db, schemarecalc.Postgres)
		},
	}
}

func newEnv(t *testing.T, s batch.Store, db *sql.DB, d batchtype.Dialect) *env {
	t.Helper()
	reg := batch.NewRegistry()
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: s, db: db, cfg: schemarecalc.Config{DB: db, Dialect: d}, reg: reg, eng: e}
}

// orders registers the orders schema kind and imports its fixture for
// tenant acme.
func (e *env) orders(t *testing.T) *tableschema.Schema {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile("../../fixtures/schemas/orders.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := tableschema.Parse(data, "orders")
	if err != nil {
		t.Fatal(err)
	}
	cfg := schemakind.Config(e.cfg)
	if err := schemakind.CreateTable(ctx, cfg, s); err != nil {
		t.Fatal(err)
	}
	if err := schemakind.Register(e.reg, s, 1, cfg); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../../fixtures/schemas/orders.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := e.eng.Import(ctx, batch.ImportParams{TenantID: "acme", Kind: "orders", SourceName: "orders.csv", Source: f})
	if err != nil {
		t.Fatal(err)
	}
	e.work(t, b.ID)
	return s
}

func (e *env) work(t *testing.T, id int64) *batchtype.Batch {
	t.Helper()
	ctx := context.Background()
	if _, err := e.eng.Work(ctx, batch.WorkParams{BatchID: id, TenantIDs: []string{"acme"}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	b, err := e.store.BatchGet(ctx, driver.BatchGetParams{TenantID: "acme", ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) recalc(t *testing.T, s *tableschema.Schema, file, where string) (*batchtype.Batch, error) {
	t.Helper()
	def, err := schemarecalc.Parse([]byte(file), "test")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := schemarecalc.New(def, s, e.cfg)
	if err != nil {
		return nil, err
	}
	if err := rc.Check(context.Background()); err != nil {
		return nil, err
	}
	if err := rc.Register(e.reg, 1); err != nil {
		t.Fatal(err)
	}
	b, err := e.eng.Recalc(context.Background(), batch.RecalcParams{TenantID: "acme", Kind: def.Name, Params: map[string]string{"where": where}})
	if err != nil {
		return nil, err
	}
	return e.work(t, b.ID), nil
}

// TestOneBadRow: a row whose new value the table refuses (NOT NULL)
// fails alone, for good, with the database's message; the chunk's other
// rows are written.
func TestOneBadRow(t *testing.T) {
	t.Parallel()
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			s := e.orders(t)
			b, err := e.recalc(t, s, `{"x-recalc": "bump", "kind": "orders", "where": ["order_id"],
				"set": {"quantity": "CASE WHEN line_no = 2 THEN NULL ELSE quantity + 1 END"}}`, "order_id = 'ORD-10001'")
			if err != nil {
				t.Fatal(err)
			}
			if b.Counts[rows.StateSucceeded] != 2 || b.Counts[rows.StateFailed] != 1 {
				t.Fatalf("counts %v, want 2 succeeded and 1 failed", b.Counts)
			}
			page, err := e.store.RowsList(context.Background(), driver.RowsListParams{TenantID: "acme", BatchID: b.ID, State: rows.StateFailed, Limit: 10})
			if err != nil || len(page) != 1 || len(page[0].Errors) == 0 || !strings.Contains(strings.ToLower(page[0].Errors[0].Message), "null") {
				t.Fatalf("failed row: %+v %v", page, err)
			}
			var q int
			if err := e.db.QueryRow(`SELECT quantity FROM orders WHERE order_id = 'ORD-10001' AND line_no = 3`).Scan(&q); err != nil || q != 10 {
				t.Errorf("ORD-10001/3 quantity %d (%v), want 10", q, err)
			}
		})
	}
}

// TestCall: a stored function computes the new values on PostgreSQL; it
// is refused on SQLite.
func TestCall(t *testing.T) {
	t.Parallel()
	file := `{"x-recalc": "ship", "kind": "orders", "where": ["order_id"], "call": "ship_later"}`
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			s := e.orders(t)
			if name == "SQLite" {
				if _, err := e.recalc(t, s, file, ""); err == nil || !strings.Contains(err.Error(), "call needs PostgreSQL") {
					t.Fatalf("call on SQLite: %v", err)
				}
				return
			}
			if _, err := e.recalc(t, s, file, ""); err == nil || !strings.Contains(err.Error(), "call ship_later does not run") {
				t.Fatalf("a call of a missing function: %v", err)
			}
			if _, err := e.db.Exec(`CREATE FUNCTION ship_later(tenant text, oid text, line bigint) RETURNS text LANGUAGE sql AS $$
				UPDATE orders SET ship_date = ship_date + 1 WHERE tenant_id = tenant AND order_id = oid AND line_no = line
				RETURNING order_id || '#' || line_no $$`); err != nil {
				t.Fatal(err)
			}
			b, err := e.recalc(t, s, file, "order_id in ('ORD-10001', 'ORD-10002')")
			if err != nil {
				t.Fatal(err)
			}
			if b.Counts[rows.StateSucceeded] != 5 {
				t.Fatalf("counts %v, want 5 succeeded", b.Counts)
			}
			var ship string
			if err := e.db.QueryRow(`SELECT CAST(ship_date AS text) FROM orders WHERE order_id = 'ORD-10001' AND line_no = 1`).Scan(&ship); err != nil || ship != "2025-01-04" {
				t.Errorf("ship_date %s (%v), want 2025-01-04", ship, err)
			}
		})
	}
}
