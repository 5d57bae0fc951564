package batch

import (
	"context"
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

// TestInlineCallsByChunk: full chunks are worked one call each, and rows
// scattered one a chunk (the held-back rows the store hands back at the
// end) in calls of up to a chunk's size, never splitting a chunk.
func TestInlineCallsByChunk(t *testing.T) {
	p := &callCounter{}
	reg := NewRegistry()
	if err := Register(reg, Kind[callRow]{Name: "calls", Processor: p, ChunkSize: 10}); err != nil {
		t.Fatal(err)
	}
	k, err := reg.lookup("calls")
	if err != nil {
		t.Fatal(err)
	}
	m, err := k.mapHeader([]string{"key"}, rows.Conventions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &inlineWork{k: k, m: m, tenant: DefaultTenant, set: k.settings(), by: map[rows.State]int{}}
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
