package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/storetest"
)

// inlineCustomers is a customers file of n rows: every 97th row invalid
// (no name), row 1500 and row 2400 repeating row 5's email (other
// chunks), and row 10 repeating row 7's (the same chunk).
func inlineCustomers(n int) []byte {
	var b bytes.Buffer
	b.WriteString("email,name,country,signup_date,amount\n")
	for i := 2; i < n+2; i++ {
		email := fmt.Sprintf("c%d@example.com", i)
		switch i {
		case 1500, 2400:
			email = "c5@example.com"
		case 10:
			email = "C7@example.com"
		}
		name := fmt.Sprintf("Customer %d", i)
		if i%97 == 0 {
			name = ""
		}
		fmt.Fprintf(&b, "%s,%s,DE,2024-01-%02d,%d.50\n", email, name, i%28+1, i)
	}
	return b.Bytes()
}

// rowStates reads every row of a batch: its state, result id, attempts
// and error codes, by row number.
func rowStates(t *testing.T, s batch.Store, tenant string, id int64) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, st := range []rows.State{rows.StateSucceeded, rows.StateInvalid, rows.StateValid, rows.StateFailed, rows.StateRetrying} {
		var after int64
		for {
			page, err := s.RowsList(context.Background(), driver.RowsListParams{TenantID: tenant, BatchID: id, State: st, AfterRowNo: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				var codes []string
				for _, fe := range r.Errors {
					codes = append(codes, fe.Column+"/"+string(fe.Code)+"/"+fe.Message)
				}
				out[r.RowNo] = fmt.Sprintf("%s id=%t attempts=%d %s", r.State, r.ResultID != "", r.Attempts, strings.Join(codes, " "))
				after = r.RowNo
			}
			if len(page) < 1000 {
				break
			}
		}
	}
	return out
}

// TestInlineImport: an import that works a transactional kind inline
// finishes with every row written once, with the same fates as an import
// worked by the workers: the repeats of a key invalid (the first row
// stored), the rest succeeded with their id, one attempt each.
func TestInlineImport(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		src := inlineCustomers(2500)
		b, err := e.Import(ctx, batch.ImportParams{TenantID: "inline", Kind: customers.Name, SourceName: "c.csv", Source: bytes.NewReader(src), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != batchtype.StatusFinished || b.Counts.Open() != 0 {
			t.Fatalf("after an inline import: status %s, counts %v", b.Status, b.Counts)
		}
		got := storetest.CheckInvariant(t, bd.store, "inline", b.ID)

		w, err := e.Import(ctx, batch.ImportParams{TenantID: "workers", Kind: customers.Name, SourceName: "c.csv", Source: bytes.NewReader(src)})
		if err != nil {
			t.Fatal(err)
		}
		if w.Counts.Open() == 0 {
			t.Fatalf("an import without WorkInline worked its rows: %v", w.Counts)
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: w.ID, TenantIDs: []string{"workers"}, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		want := storetest.CheckInvariant(t, bd.store, "workers", w.ID)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("inline counts %v, workers' %v", got, want)
		}
		inline, workers := rowStates(t, bd.store, "inline", b.ID), rowStates(t, bd.store, "workers", w.ID)
		if len(inline) != 2500 {
			t.Fatalf("%d rows read back, want 2500", len(inline))
		}
		for row, st := range workers {
			if inline[row] != st {
				t.Errorf("row %d: inline %q, workers %q", row, inline[row], st)
			}
		}
		for _, row := range []int64{10, 1500, 2400} {
			if !strings.Contains(inline[row], "duplicate_key") {
				t.Errorf("row %d = %q, want a duplicate_key", row, inline[row])
			}
		}
		if !strings.HasPrefix(inline[5], "succeeded id=true attempts=1") {
			t.Errorf("row 5 = %q", inline[5])
		}
		var n int
		if err := bd.db.QueryRowContext(ctx, `SELECT count(*) FROM customers WHERE tenant_id = 'inline'`).Scan(&n); err != nil || int64(n) != got[rows.StateSucceeded] {
			t.Fatalf("customers of the inline tenant = %d, %v; succeeded rows %d", n, err, got[rows.StateSucceeded])
		}
		// The customers written inline are the ones the workers wrote,
		// column by column.
		if in, wk := customerRows(t, bd, "inline"), customerRows(t, bd, "workers"); in != wk {
			t.Fatalf("customers written inline differ from the workers':\n%s\nworkers:\n%s", in, wk)
		}
		evs, err := e.Events(ctx, batch.EventsParams{TenantID: "inline", BatchID: b.ID})
		if err != nil || len(evs) == 0 || !evs[len(evs)-1].Final || evs[len(evs)-1].Status != batchtype.StatusFinished {
			t.Fatalf("events %+v, %v: want a final finished event", evs, err)
		}
	})
}

// customerRows lists a tenant's customers, their every column but ids and
// times, in email order.
func customerRows(t *testing.T, bd *bundle, tenant string) string {
	t.Helper()
	rs, err := bd.db.QueryContext(context.Background(), `SELECT email, name, COALESCE(country, ''), CAST(signup_date AS text), COALESCE(CAST(amount AS text), '')
		FROM customers WHERE tenant_id = $1 ORDER BY email`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var b strings.Builder
	for rs.Next() {
		var email, name, country, date, amount string
		if err := rs.Scan(&email, &name, &country, &date, &amount); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, email, name, country, date, amount)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestInlineSuspects: a row whose key the import's filter may have seen
// is held back until the store has found the true repeats; the rest are
// then worked in the same transaction. With a filter far too small nearly
// every row is held back, and the fates are still those of an import
// worked by the workers, the batch finished when the import returns.
func TestInlineSuspects(t *testing.T) {
	t.Parallel()
	for _, readBack := range []bool{false, true} {
		t.Run(fmt.Sprintf("readBack=%v", readBack), func(t *testing.T) {
			t.Parallel()
			testInlineSuspects(t, readBack)
		})
	}
}

// testInlineSuspects: the suspects the import held for the store, or,
// past what it holds, read back by the store.
func testInlineSuspects(t *testing.T, readBack bool) {
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		batch.SetKeyFilterRows(e, 1)
		if readBack {
			batch.SetMaxHeld(e, 10)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "c.csv", Source: bytes.NewReader(inlineCustomers(2500)), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		if b.Status != batchtype.StatusFinished {
			t.Fatalf("status %s, counts %v: the rows held back were not worked", b.Status, b.Counts)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		// 25 rows without a name, 3 repeated keys.
		if got[rows.StateSucceeded] != 2500-25-3 || got[rows.StateInvalid] != 28 {
			t.Fatalf("counts %v", got)
		}
		states := rowStates(t, bd.store, "default", b.ID)
		if !strings.Contains(states[2400], "same email as row 5") || !strings.Contains(states[10], "same email as row 7") {
			t.Fatalf("row 2400 %q, row 10 %q", states[2400], states[10])
		}
		if !strings.HasPrefix(states[2000], "succeeded id=true attempts=1") {
			t.Fatalf("row 2000 = %q", states[2000])
		}
	})
}

// keyRow is a row of the inline tests' own transactional kind.
type keyRow struct {
	Key string `col:"key" validate:"required"`
}

// keyTx inserts each row's key into inline_keys, whose primary key would
// refuse a key written twice. failCall fails the call with that number
// (1-based) as a whole; failRows fails every row; cancel is called at
// the call cancelAt.
type keyTx struct {
	calls    atomic.Int64
	failCall int64
	failRows bool
	cancelAt int64
	cancel   func()
}

func (p *keyTx) Process(context.Context, keyRow) (string, error) {
	return "", errors.New("called outside a transaction")
}

func (p *keyTx) ProcessTx(ctx context.Context, tx batch.Tx, rs []keyRow) ([]batch.Result, error) {
	n := p.calls.Add(1)
	out := make([]batch.Result, len(rs))
	for i, r := range rs {
		if p.failRows {
			out[i].Err = batch.Permanent(errors.New("refused"))
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO inline_keys (k) VALUES ($1)`, r.Key); err != nil {
			return nil, err
		}
		out[i].ID = r.Key
	}
	if n == p.cancelAt {
		p.cancel()
	}
	if n == p.failCall {
		return nil, errors.New("the whole call failed")
	}
	return out, nil
}

// keyEngine registers the keys kind (chunks of 10 rows) with p, on a
// fresh inline_keys table.
func keyEngine(t *testing.T, bd *bundle, p *keyTx, maxFailed string) *batch.Engine {
	t.Helper()
	if _, err := bd.db.Exec(`CREATE TABLE inline_keys (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	bound, err := batch.ParseThreshold(maxFailed)
	if err != nil {
		t.Fatal(err)
	}
	reg := batch.NewRegistry()
	if err := batch.Register(reg, batch.Kind[keyRow]{Name: "keys", Processor: p, ChunkSize: 10, MaxFailed: bound}); err != nil {
		t.Fatal(err)
	}
	return newEngine(t, bd.store, reg, 0)
}

func keysFile(n int) []byte {
	var b bytes.Buffer
	b.WriteString("key,note\n")
	for i := range n {
		fmt.Fprintf(&b, "k%d,x\n", i)
	}
	return b.Bytes()
}

func countKeys(t *testing.T, bd *bundle) int {
	t.Helper()
	var n int
	if err := bd.db.QueryRow(`SELECT count(*) FROM inline_keys`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInlineChunkFailure: a chunk whose call fails as a whole is rolled
// back to its own savepoint, the chunks before it keep their effects, and
// it and the rest are left to the workers, which write each key once.
func TestInlineChunkFailure(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		p := &keyTx{failCall: 2}
		e := keyEngine(t, bd, p, "")
		b, err := e.Import(ctx, batch.ImportParams{Kind: "keys", SourceName: "k.csv", Source: bytes.NewReader(keysFile(35)), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateSucceeded] != 10 || b.Counts[rows.StateValid] != 25 || countKeys(t, bd) != 10 {
			t.Fatalf("after the failed chunk: counts %v, %d keys; want the first chunk's 10", b.Counts, countKeys(t, bd))
		}
		if _, err := e.Work(ctx, batch.WorkParams{BatchID: b.ID, UntilDone: true}); err != nil {
			t.Fatal(err)
		}
		got := storetest.CheckInvariant(t, bd.store, "default", b.ID)
		if got[rows.StateSucceeded] != 35 || countKeys(t, bd) != 35 {
			t.Fatalf("counts %v, %d keys", got, countKeys(t, bd))
		}
	})
}

// TestInlineAllOrNothing: an inline import that fails leaves none of its
// effects: rejected by --max-invalid once every row is written, or cut
// off while its rows are worked.
func TestInlineAllOrNothing(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		p := &keyTx{}
		e := keyEngine(t, bd, p, "")
		src := append(keysFile(35), []byte(",x\n,y\n,z\n")...) // three rows without a key
		_, err := e.Import(context.Background(), batch.ImportParams{Kind: "keys", SourceName: "k.csv", Source: bytes.NewReader(src), WorkInline: true,
			MaxInvalid: batch.Threshold{Count: 2}})
		if !errors.Is(err, batch.ErrTooManyInvalid) {
			t.Fatalf("err = %v, want ErrTooManyInvalid", err)
		}
		if n := countKeys(t, bd); n != 0 || p.calls.Load() == 0 {
			t.Fatalf("a rejected inline import left %d keys (%d calls)", n, p.calls.Load())
		}

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p.cancelAt, p.cancel = p.calls.Load()+2, cancel
		_, err = e.Import(ctx, batch.ImportParams{Kind: "keys", SourceName: "k2.csv", Source: bytes.NewReader(keysFile(60)), WorkInline: true})
		if err == nil {
			t.Fatal("an import cut off while its rows were worked succeeded")
		}
		if n := countKeys(t, bd); n != 0 {
			t.Fatalf("a cut-off inline import left %d keys", n)
		}
		list, err := e.Batches(context.Background(), batch.BatchesParams{})
		if err != nil || len(list) != 0 {
			t.Fatalf("batches %v, %v; want none", list, err)
		}
	})
}

// TestInlineFailureBound: the inline work stops once the failures pass
// the batch's bound, and the batch is paused with its reason, as a flush
// pauses it.
func TestInlineFailureBound(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := keyEngine(t, bd, &keyTx{failRows: true}, "15")
		b, err := e.Import(ctx, batch.ImportParams{Kind: "keys", SourceName: "k.csv", Source: bytes.NewReader(keysFile(100)), WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		if !b.Paused || b.Counts[rows.StateFailed] != 20 || b.Counts[rows.StateValid] != 80 {
			t.Fatalf("paused %t, counts %v: want paused after two chunks of failures", b.Paused, b.Counts)
		}
		evs, err := e.Events(ctx, batch.EventsParams{BatchID: b.ID})
		if err != nil || len(evs) == 0 {
			t.Fatal(evs, err)
		}
		last := evs[len(evs)-1]
		if last.Type != batchtype.EventPaused || !last.Final || !strings.Contains(last.Reason, "20 of 100 rows failed") {
			t.Fatalf("last event %+v", last)
		}
	})
}

// TestFinishedAtIngest: a batch with nothing left to work when it is
// accepted (every row invalid) ends with a final finished event, as a
// flush ends one, after its started event. It had only a started event,
// so no batch.finished webhook was ever sent for it.
func TestFinishedAtIngest(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := keyEngine(t, bd, &keyTx{}, "")
		b, err := e.Import(ctx, batch.ImportParams{Kind: "keys", SourceName: "k.csv", Source: strings.NewReader("key,note\n,a\n,b\n")})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := e.Events(ctx, batch.EventsParams{BatchID: b.ID})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range evs {
			types = append(types, fmt.Sprintf("%s final=%t", ev.Type, ev.Final))
		}
		if got := strings.Join(types, ", "); got != "started final=false, finished final=true" {
			t.Fatalf("events: %s", got)
		}
	})
}

// TestImportAfterImporterDied: an import whose key finds a batch still
// ingesting, whose importer died (its lease runs out), waits for the
// lease, removes that batch and imports the file itself, instead of
// answering a batch about to vanish (a retry after a crash got nothing).
func TestImportAfterImporterDied(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := keyEngine(t, bd, &keyTx{}, "")
		lease := `now() + interval '300 milliseconds'`
		if bd.dialect == customers.SQLite {
			lease = `CAST(unixepoch('subsec') * 1000 AS INTEGER) + 300`
		}
		if _, err := bd.db.ExecContext(ctx, `INSERT INTO batches (tenant_id, kind, status, idempotency_key, source_digest, created_at, ingest_expires_at)
			VALUES ('default', 'keys', 'ingesting', 'k1', 'x', `+strings.Replace(lease, "+ 300", "", 1)+`, `+lease+`)`); err != nil {
			t.Fatal(err)
		}
		var dead int64
		if err := bd.db.QueryRowContext(ctx, `SELECT id FROM batches`).Scan(&dead); err != nil {
			t.Fatal(err)
		}
		b, err := e.Import(ctx, batch.ImportParams{Kind: "keys", SourceName: "k.csv", Source: bytes.NewReader(keysFile(20)), IdempotencyKey: "k1", WorkInline: true})
		if err != nil {
			t.Fatal(err)
		}
		// (SQLite may give the new batch the dead one's id again.)
		if b.SourceDigest == "x" || b.Reused || b.Counts[rows.StateSucceeded] != 20 {
			t.Fatalf("import after its importer died: batch %d (the dead one %d), reused %t, counts %v", b.ID, dead, b.Reused, b.Counts)
		}
		if list, err := e.Batches(ctx, batch.BatchesParams{}); err != nil || len(list) != 1 {
			t.Fatalf("batches after: %v, %v; want the new one only", list, err)
		}
	})
}
