package schemakind_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/teststore"
	"github.com/rowfate/rowfate/processors/schemakind"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/tableschema"
)

const fixtures = "../../fixtures/schemas"

// env is an engine on a real store, and the database its tables are in.
type env struct {
	store batch.Store
	db    *sql.DB
	cfg   schemakind.Config
	reg   *batch.Registry
	eng   *batch.Engine
}

func envs() map[string]func(t *testing.T) *env {
	return map[string]func(t *testing.T) *env{
		"SQLite": func(t *testing.T) *env {
			s := teststore.SQLite(t)
			return newEnv(t, s, s.DB(), schemakind.SQLite)
		},
		"PostgreSQL": func(t *testing.T) *env {
			// The tables go in the test's own schema (the pool's
			// search_path), dropped with it.
			s := teststore.Postgres(t)
			db := stdlib.OpenDBFromPool(s.Pool())
			t.Cleanup(func() { db.Close() })
			return newEnv(t, s, db, schemakind.Postgres)
		},
	}
}

func newEnv(t *testing.T, s batch.Store, db *sql.DB, dialect batchtype.Dialect) *env {
	t.Helper()
	reg := batch.NewRegistry()
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: reg, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: s, db: db, cfg: schemakind.Config{DB: db, Dialect: dialect}, reg: reg, eng: e}
}

func readSchema(t *testing.T, name string) *tableschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tableschema.Parse(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// register creates the schema's table and registers its kind.
func (e *env) register(t *testing.T, s *tableschema.Schema) {
	t.Helper()
	if err := schemakind.CreateTable(context.Background(), e.cfg, s); err != nil {
		t.Fatal(err)
	}
	if err := schemakind.Register(e.reg, s, 1, e.cfg); err != nil {
		t.Fatal(err)
	}
}

func (e *env) importFile(t *testing.T, kind, file, tenant string) *batchtype.Batch {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtures, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return e.importReader(t, kind, file, tenant, f)
}

func (e *env) importReader(t *testing.T, kind, name, tenant string, src interface{ Read([]byte) (int, error) }) *batchtype.Batch {
	t.Helper()
	b, err := e.eng.Import(context.Background(), batch.ImportParams{TenantID: tenant, Kind: kind, SourceName: name, Source: src, NewBatch: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{tenant}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	b, err = e.store.BatchGet(context.Background(), driver.BatchGetParams{TenantID: tenant, ID: b.ID})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errorsOf lists a batch's rows in a state, as "row column:code".
func (e *env) errorsOf(t *testing.T, b *batchtype.Batch, state rows.State) []string {
	t.Helper()
	page, err := e.store.RowsList(context.Background(), driver.RowsListParams{TenantID: b.TenantID, BatchID: b.ID, State: state, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page {
		for _, fe := range r.Errors {
			out = append(out, fmt.Sprintf("%d %s:%s", r.RowNo, fe.Column, fe.Code))
		}
	}
	return out
}

func (e *env) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExamples imports the three example schemas' files end to end on
// both stores: invalid rows reported per column, valid rows written to
// their table per tenant, the error report fixed and re-run.
func TestExamples(t *testing.T) {
	t.Parallel()
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			orders := readSchema(t, "orders.schema.json")
			products := readSchema(t, "products.schema.yaml")
			events := readSchema(t, "events.schema.json")
			for _, s := range []*tableschema.Schema{orders, products, events} {
				e.register(t, s)
			}

			// Orders: a composite key, a pattern, bounds, a cross-field rule.
			b := e.importFile(t, "orders", "orders.csv", "acme")
			if b.Counts[rows.StateSucceeded] != 32 || b.Counts[rows.StateInvalid] != 8 {
				t.Fatalf("orders: %v, want 32 succeeded and 8 invalid", b.Counts)
			}
			want := []string{"7 order_id:pattern", "11 qty:minimum", "16 ship_date:rule", "20 order_date:bad_date",
				"24 unit_price:minimum", "29 :duplicate_key", "33 customer_email:email", "38 line_no:minimum"}
			if got := e.errorsOf(t, b, rows.StateInvalid); !slices.Equal(got, want) {
				t.Errorf("orders' invalid rows:\n got %v\nwant %v", got, want)
			}
			if n := e.count(t, `SELECT count(*) FROM orders WHERE tenant_id = 'acme'`); n != 32 {
				t.Errorf("%d orders written, want 32", n)
			}
			// The same file for another tenant writes that tenant's rows.
			if g := e.importFile(t, "orders", "orders.csv", "globex"); g.Counts[rows.StateSucceeded] != 32 {
				t.Errorf("globex's orders: %v", g.Counts)
			}
			if n := e.count(t, `SELECT count(*) FROM orders`); n != 64 {
				t.Errorf("%d orders in all, want 32 per tenant", n)
			}

			// The error report, fixed and imported again, re-runs the batch.
			var rep bytes.Buffer
			if _, err := e.eng.ErrorReport(context.Background(), batch.ErrorReportParams{TenantID: "acme", BatchID: b.ID}, &rep); err != nil {
				t.Fatal(err)
			}
			fixed := strings.NewReplacer("ORDER-1,", "ORD-99999,", "not-an-email", "fixed@example.com", "2025-02-30", "2025-02-28").Replace(rep.String())
			res, err := e.eng.Rerun(context.Background(), batch.RerunParams{TenantID: "acme", BatchID: b.ID, Source: strings.NewReader(fixed), SourceName: "fixed.csv"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid != 3 || res.Invalid != 5 {
				t.Errorf("re-run: %+v, want 3 valid and 5 still invalid", res)
			}
			if _, err := e.eng.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"acme"}, UntilDone: true}); err != nil {
				t.Fatal(err)
			}
			if n := e.count(t, `SELECT count(*) FROM orders WHERE tenant_id = 'acme'`); n != 35 {
				t.Errorf("%d orders after the re-run, want 35", n)
			}
			rb, err := e.store.BatchGet(context.Background(), driver.BatchGetParams{TenantID: "acme", ID: b.ID})
			if err != nil || rb.KindVersion != 1 {
				t.Errorf("the batch's kind version: %+v, %v", rb, err)
			}

			// Products: YAML, enums, decimal commas, booleans, missing values.
			p := e.importFile(t, "products", "products.csv", "acme")
			if p.Counts[rows.StateSucceeded] != 20 || p.Counts[rows.StateInvalid] != 5 {
				t.Fatalf("products: %v (%v)", p.Counts, e.errorsOf(t, p, rows.StateInvalid))
			}
			wantP := []string{"5 category:enum", "10 price:not_a_number", "14 sku:pattern", "19 vat_rate:enum", "23 active:not_a_bool"}
			if got := e.errorsOf(t, p, rows.StateInvalid); !slices.Equal(got, wantP) {
				t.Errorf("products' invalid rows:\n got %v\nwant %v", got, wantP)
			}
			var price string
			var stock sql.NullInt64
			if err := e.db.QueryRow(`SELECT CAST(price AS TEXT), stock FROM products WHERE tenant_id = 'acme' AND sku = 'PRD-0002'`).Scan(&price, &stock); err != nil {
				t.Fatal(err)
			}
			if price != "1178.16" || !stock.Valid || stock.Int64 != 47 {
				t.Errorf("PRD-0002: price %q stock %v, want 1178.16 and 47", price, stock)
			}
			if e.count(t, `SELECT count(*) FROM products WHERE tenant_id = 'acme' AND stock IS NULL`) == 0 {
				t.Error("a '-' stock was written as a value, not left empty")
			}

			// Events: insert only; the same file again is refused row by row.
			ev := e.importFile(t, "events", "events.csv", "acme")
			if ev.Counts[rows.StateSucceeded] != 26 || ev.Counts[rows.StateInvalid] != 4 {
				t.Fatalf("events: %v (%v)", ev.Counts, e.errorsOf(t, ev, rows.StateInvalid))
			}
			again := e.importFile(t, "events", "events.csv", "acme")
			if again.Counts[rows.StateFailed] != 26 {
				t.Errorf("events again: %v, want 26 failed (in the table already)", again.Counts)
			}
			if n := e.count(t, `SELECT count(*) FROM audit_events`); n != 26 {
				t.Errorf("%d events, want 26 (inserted once)", n)
			}
		})
	}
}

// TestPresence: an update writes only what the file gave; a column the
// file lacks, or an empty cell in an optional column, keeps its value.
func TestPresence(t *testing.T) {
	t.Parallel()
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			e.register(t, readSchema(t, "orders.schema.json"))
			full := "order_id,line_no,sku,quantity,unit_price,order_date,ship_date,customer_email\nORD-00001,1,SKU-1,2,10.00,2025-01-01,2025-01-02,a@example.com\n"
			e.importReader(t, "orders", "a.csv", "acme", strings.NewReader(full))
			// No unit_price or ship_date column; an empty customer_email.
			part := "order_id,line_no,sku,quantity,order_date,customer_email\nORD-00001,1,SKU-2,5,2025-01-01,\n"
			b := e.importReader(t, "orders", "b.csv", "acme", strings.NewReader(part))
			if b.Counts[rows.StateSucceeded] != 1 {
				t.Fatalf("update: %v", b.Counts)
			}
			var sku, price, email string
			var qty int
			var ship sql.NullString
			if err := e.db.QueryRow(`SELECT sku, quantity, CAST(unit_price AS TEXT), CAST(ship_date AS TEXT), customer_email FROM orders`).Scan(&sku, &qty, &price, &ship, &email); err != nil {
				t.Fatal(err)
			}
			if sku != "SKU-2" || qty != 5 || price != "10.00" || !ship.Valid || !strings.HasPrefix(ship.String, "2025-01-02") || email != "a@example.com" {
				t.Errorf("after the partial file: sku %s qty %d price %s ship %v email %q", sku, qty, price, ship, email)
			}
		})
	}
}

// TestTableMismatch: a table whose column type disagrees with the schema
// is refused before any row is read, naming the column and the types.
func TestTableMismatch(t *testing.T) {
	t.Parallel()
	for name, open := range envs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := open(t)
			s := readSchema(t, "events.schema.json")
			if _, err := e.db.Exec(`CREATE TABLE audit_events (tenant_id text NOT NULL, event_id text NOT NULL, occurred_at text, type text, user_email text, bytes boolean, PRIMARY KEY (tenant_id, event_id))`); err != nil {
				t.Fatal(err)
			}
			if err := schemakind.Register(e.reg, s, 1, e.cfg); err != nil {
				t.Fatal(err)
			}
			err := schemakind.CheckTable(context.Background(), e.cfg, s)
			if !errors.Is(err, schemakind.ErrTable) || !strings.Contains(err.Error(), "column bytes is boolean, which does not hold a integer") {
				t.Fatalf("check = %v", err)
			}
			f, _ := os.Open(filepath.Join(fixtures, "events.csv"))
			defer f.Close()
			_, err = e.eng.Import(context.Background(), batch.ImportParams{TenantID: "acme", Kind: "events", SourceName: "events.csv", Source: f})
			if !errors.Is(err, schemakind.ErrTable) {
				t.Fatalf("import = %v, want the table refused", err)
			}
			if bs, _ := e.store.BatchList(context.Background(), driver.BatchListParams{TenantID: "acme"}); len(bs) != 0 {
				t.Errorf("a refused import left %d batches", len(bs))
			}
		})
	}
}
