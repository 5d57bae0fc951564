package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

type callRow struct {
	Key string `col:"key"`
}

// callCounter records the rows of each processor call.
type callCounter struct{ calls [][]callRow }

func (c *callCounter) Process(context.Context, callRow) (string, error) { return "", nil }

func (c *callCounter) ProcessTx(_ context.Context, _ Tx, rs []callRow) ([]Result, error) {
	c.calls = append(c.calls, rs)
	out := make([]Result, len(rs))
	for i, r := range rs {
		out[i].ID = r.Key
	}
	return out, nil
}

// nopTx is a transaction whose statements (the savepoints) do nothing.
type nopTx struct{}

func (nopTx) Exec(context.Context, string, ...any) (int64, error)          { return 0, nil }
func (nopTx) Query(context.Context, string, ...any) (driver.TxRows, error) { return nil, nil }
func (nopTx) QueryRow(context.Context, string, ...any) driver.TxRow        { return nil }
func (nopTx) Engine() batchtype.Dialect                                    { return batchtype.SQLite }

// callsWork returns the inline work of kind k, outside any import.
func callsWork(t *testing.T, k Kind[callRow]) *inlineWork {
	t.Helper()
	reg := NewRegistry()
	if err := Register(reg, k); err != nil {
		t.Fatal(err)
	}
	kk, err := reg.lookup(k.Name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := kk.mapHeader([]string{"key"}, rows.Conventions{})
	if err != nil {
		t.Fatal(err)
	}
	return &inlineWork{e: &Engine{logger: slog.New(slog.DiscardHandler)}, k: kk, m: m, tenant: DefaultTenant, set: kk.settings(), by: map[rows.State]int{}}
}

// TestInlineCallsByChunk: full chunks are worked one call each, and rows
// scattered one a chunk (the held-back rows the store hands back at the
// end) in calls of up to a chunk's size, never splitting a chunk.
func TestInlineCallsByChunk(t *testing.T) {
	p := &callCounter{}
	w := callsWork(t, Kind[callRow]{Name: "calls", Processor: p, ChunkSize: 10})
	row := func(no, chunk int64) driver.IngestRow {
		return driver.IngestRow{RowNo: no, ChunkNo: chunk, State: rows.StateValid, Values: []string{"k"}}
	}
	var full []driver.IngestRow
	for no := int64(1); no <= 30; no++ {
		full = append(full, row(no, (no-1)/10))
	}
	if err := w.work(context.Background(), nopTx{}, 1, full); err != nil {
		t.Fatal(err)
	}
	if len(p.calls) != 3 || len(p.calls[0]) != 10 {
		t.Fatalf("3 full chunks: %d calls", len(p.calls))
	}
	p.calls = nil
	var sparse []driver.IngestRow
	for c := int64(0); c < 25; c++ {
		sparse = append(sparse, row(c*10+1, c))
		if c == 9 {
			sparse = append(sparse, row(c*10+2, c)) // two rows of one chunk
		}
	}
	if err := w.work(context.Background(), nopTx{}, 1, sparse); err != nil {
		t.Fatal(err)
	}
	// 26 rows of 25 chunks: calls of 11 (chunk 9's two rows kept
	// together), 10 and the rest.
	var sizes []int
	for _, c := range p.calls {
		sizes = append(sizes, len(c))
	}
	if len(sizes) != 3 || sizes[0] != 11 || sizes[1] != 10 || sizes[2] != 5 {
		t.Fatalf("scattered rows: calls of %v rows, want [11 10 5]", sizes)
	}
	for _, r := range sparse {
		if r.State != rows.StateSucceeded {
			t.Fatalf("row %d: %s", r.RowNo, r.State)
		}
	}
}

// failOn fails as a whole every call that holds the row with key bad,
// recording the sizes of the calls.
type failOn struct {
	bad   string
	sizes []int
}

func (f *failOn) Process(context.Context, callRow) (string, error) { return "", nil }

func (f *failOn) ProcessTx(_ context.Context, _ Tx, rs []callRow) ([]Result, error) {
	f.sizes = append(f.sizes, len(rs))
	out := make([]Result, len(rs))
	for i, r := range rs {
		if r.Key == f.bad {
			return nil, errors.New("the downstream table is gone")
		}
		out[i].ID = r.Key
	}
	return out, nil
}

// stmtTx records the statements run on it (the savepoints).
type stmtTx struct {
	nopTx
	stmts []string
}

func (t *stmtTx) Exec(_ context.Context, sql string, _ ...any) (int64, error) {
	t.stmts = append(t.stmts, sql)
	return 0, nil
}

// TestInlineCallsOfSeveralChunks: with InlineCallRows, a call takes
// whole chunks while it holds fewer rows than that; a call that fails as
// a whole is rolled back and its chunks are tried one by one, so the rows
// worked are those a call per chunk works: the chunks before the failing
// one, and nothing from it on.
func TestInlineCallsOfSeveralChunks(t *testing.T) {
	run := func(callRows int) (*failOn, []driver.IngestRow, *stmtTx, *inlineWork) {
		t.Helper()
		p := &failOn{bad: "k45"}
		w := callsWork(t, Kind[callRow]{Name: "calls", Processor: p, ChunkSize: 10, InlineCallRows: callRows})
		var rs []driver.IngestRow
		for no := int64(1); no <= 100; no++ {
			rs = append(rs, driver.IngestRow{RowNo: no, ChunkNo: (no - 1) / 10, State: rows.StateValid, Values: []string{fmt.Sprintf("k%d", no)}})
		}
		tx := &stmtTx{}
		if err := w.work(context.Background(), tx, 1, rs); err != nil {
			t.Fatal(err)
		}
		return p, rs, tx, w
	}
	grouped, rs, tx, w := run(30)
	if want := []int{30, 30, 10, 10}; !slices.Equal(grouped.sizes, want) {
		t.Fatalf("calls of %v rows, want %v (rows 1-30, 31-60 failing, then 31-40 and 41-50 failing)", grouped.sizes, want)
	}
	if !w.off {
		t.Fatal("the inline work goes on after a chunk failed")
	}
	want := []string{
		"SAVEPOINT rowfate_inline_chunk", "RELEASE SAVEPOINT rowfate_inline_chunk",
		"SAVEPOINT rowfate_inline_chunk", "ROLLBACK TO SAVEPOINT rowfate_inline_chunk", "RELEASE SAVEPOINT rowfate_inline_chunk",
		"SAVEPOINT rowfate_inline_chunk", "RELEASE SAVEPOINT rowfate_inline_chunk",
		"SAVEPOINT rowfate_inline_chunk", "ROLLBACK TO SAVEPOINT rowfate_inline_chunk", "RELEASE SAVEPOINT rowfate_inline_chunk",
	}
	if !slices.Equal(tx.stmts, want) {
		t.Fatalf("statements:\n%v\nwant\n%v", tx.stmts, want)
	}
	byChunk, _, _, _ := run(0)
	if want := []int{10, 10, 10, 10, 10}; !slices.Equal(byChunk.sizes, want) {
		t.Fatalf("a call per chunk: calls of %v rows, want %v", byChunk.sizes, want)
	}
	_, perChunk, _, _ := run(0)
	for i, r := range rs {
		wantState := rows.StateValid
		if r.RowNo <= 40 {
			wantState = rows.StateSucceeded
		}
		if r.State != wantState || perChunk[i].State != wantState {
			t.Fatalf("row %d: %s grouped, %s a call per chunk, want %s", r.RowNo, r.State, perChunk[i].State, wantState)
		}
		if wantState == rows.StateSucceeded && r.ResultID != fmt.Sprintf("k%d", r.RowNo) {
			t.Fatalf("row %d: result id %q", r.RowNo, r.ResultID)
		}
	}
}
