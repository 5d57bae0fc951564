package postgres

import (
	"context"
	"encoding/binary"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// An ingest's rows go to the server as COPY ... FROM STDIN in the binary
// format, encoded here rather than by pgx.CopyFrom: pgx boxes each value
// in an interface and looks its encode plan up in its type map, value by
// value, which cost about a tenth of an import's client CPU (15 values a
// row, 1,000,000 rows) and most of its allocations. The columns and their
// types are the store's own and fixed, so each is written as it is.

// binaryCopy is a COPY stream in the binary format, as an io.Reader for
// pgconn.CopyFrom: fill appends rows to the buffer it is given, until it
// holds at least copyBufferSize bytes or the rows run out (done).
type binaryCopy struct {
	// mu is held while the stream is read: pgconn reads it on a goroutine
	// of its own, which may still be in Read when CopyFrom returns with
	// an error; close waits for it, so that nothing reads the engine's
	// rows once copyBinary returned.
	mu      sync.Mutex
	closed  bool
	fill    func(buf []byte) (out []byte, done bool, err error)
	buf     []byte
	off     int
	started bool
	done    bool
}

// copyBufferSize is about how much of the stream is encoded at a time.
const copyBufferSize = 64 << 10

// copySignature starts every binary COPY stream: the signature, no flags
// and no header extension.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

func (b *binaryCopy) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	for b.off == len(b.buf) {
		if b.done {
			return 0, io.EOF
		}
		b.buf, b.off = b.buf[:0], 0
		if !b.started {
			b.buf, b.started = append(b.buf, copySignature...), true
		}
		var err error
		if b.buf, b.done, err = b.fill(b.buf); err != nil {
			return 0, err
		}
		if b.done {
			b.buf = binary.BigEndian.AppendUint16(b.buf, 0xffff) // the trailer
		}
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	return n, nil
}

// copyBinary runs COPY table (columns) FROM STDIN in the binary format on
// tx's connection, with the rows fill encodes.
func copyBinary(ctx context.Context, tx copier, table pgx.Identifier, columns []string, fill func([]byte) ([]byte, bool, error)) error {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	sql := "COPY " + table.Sanitize() + " (" + strings.Join(quoted, ", ") + ") FROM STDIN (FORMAT binary)"
	stream := &binaryCopy{fill: fill, buf: make([]byte, 0, copyBufferSize+4096)}
	_, err := tx.Conn().PgConn().CopyFrom(ctx, stream, sql)
	stream.close()
	return err
}

// close waits for a Read under way and makes every later one fail.
func (b *binaryCopy) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// The fields of a binary COPY tuple: a length (-1 for NULL), then the
// value in the type's binary format.

func appendTuple(buf []byte, fields int) []byte {
	return binary.BigEndian.AppendUint16(buf, uint16(fields))
}

func appendNull(buf []byte) []byte { return binary.BigEndian.AppendUint32(buf, 0xffffffff) }

func appendInt8(buf []byte, v int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(v))
}

func appendInt4(buf []byte, v int32) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 4)
	return binary.BigEndian.AppendUint32(buf, uint32(v))
}

func appendText(buf []byte, s string) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// appendBytea writes b, or NULL for nil.
func appendBytea(buf, b []byte) []byte {
	if b == nil {
		return appendNull(buf)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...)
}

// appendJSONB writes JSON text as jsonb (its format version, 1, then the
// text), or NULL for nil.
func appendJSONB(buf, json []byte) []byte {
	if json == nil {
		return appendNull(buf)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(json)+1))
	buf = append(buf, 1)
	return append(buf, json...)
}

// postgresEpoch is where timestamptz's microseconds count from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// appendTimestamptz writes t as microseconds since 2000-01-01 UTC,
// truncated as pgx truncates them.
func appendTimestamptz(buf []byte, t time.Time) []byte {
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - postgresEpoch.Unix()*1_000_000
	return appendInt8(buf, us)
}
