package batch

import (
	"context"

	"github.com/rowfate/rowfate/batch/driver"
)

// RowInfo is what a processor knows of the row it works beyond the row's
// data: whose it is, where it is, which attempt this is, and the row's
// effect key.
type RowInfo struct {
	TenantID string
	BatchID  int64
	RowNo    int64
	// Attempt counts from 1, across workers and reclaims.
	Attempt int
	// EffectKey names the row's effect, the same on every attempt and
	// after any reclaim: a processor with an external effect passes it
	// downstream (an Idempotency-Key header), so that the downstream
	// applies the effect once whoever asks again. Kind.EffectKeyFunc
	// derives it from the row's data; by default it is
	// "<tenant>/<batch>/<row>".
	EffectKey string
}

type rowInfoKey struct{}

type chunkInfoKey struct{}

// ContextWithRow returns ctx carrying info, as the engine hands it to
// Process; tests of a processor use it too.
func ContextWithRow(ctx context.Context, info RowInfo) context.Context {
	return context.WithValue(ctx, rowInfoKey{}, info)
}

// RowFrom returns the row a Process call is for.
func RowFrom(ctx context.Context) (RowInfo, bool) {
	info, ok := ctx.Value(rowInfoKey{}).(RowInfo)
	return info, ok
}

// ContextWithChunk returns ctx carrying the rows of a ProcessChunk or
// ProcessTx call, in the order of its rows.
func ContextWithChunk(ctx context.Context, infos []RowInfo) context.Context {
	return context.WithValue(ctx, chunkInfoKey{}, infos)
}

// ChunkFrom returns the rows of a ProcessChunk or ProcessTx call, in the
// order of its rows.
func ChunkFrom(ctx context.Context) ([]RowInfo, bool) {
	infos, ok := ctx.Value(chunkInfoKey{}).([]RowInfo)
	return infos, ok
}

// Tx is the transaction a TxProcessor writes in: the engine's own, the
// one its chunk's outcomes commit in. Statements use $1, $2 placeholders
// (both stores accept them); Engine says which SQL dialect runs them.
type Tx = driver.Tx

// TxProcessor is a processor whose effect lives in the engine's own
// database (rows into a table, an upsert): its writes and the chunk's
// outcomes commit in one transaction, under the check of the chunk's
// fencing token. A worker that lost its lease has its writes rolled back
// with its outcomes, so each row's effect happens exactly once.
//
// ProcessTx returns one Result per row, in order. A row's error must not
// leave the transaction broken for the others: a processor that runs
// statements that can fail per row wraps each in a SAVEPOINT. An error for
// the whole call rolls back every write of the chunk, and its rows are
// retried. A kind whose Processor implements TxProcessor is run this way.
type TxProcessor[T any] interface {
	ProcessTx(ctx context.Context, tx Tx, rows []T) ([]Result, error)
}
