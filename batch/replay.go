package batch

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rowfate/rowfate/rows"
)

// A workbook's rows cost far more to read than to store: a sheet is
// inflated and its XML parsed, where a CSV line is split. So the first
// pass over a workbook (profile) records the records it reads to a
// temporary file, and the second pass replays them instead of parsing the
// file again: the file is parsed once, and the second pass reads back
// length-prefixed strings.

// replayFormat is the format whose records are recorded: the XLSX
// reader's (xlsxfile.Name).
const replayFormat = "xlsx"

// recorder is a reader whose records are also written to a file.
type recorder struct {
	rows.Reader
	f   *os.File
	w   *bufio.Writer
	buf []byte
	err error // the first write error: the recording is then dropped
}

func newRecorder(r rows.Reader, dir string) (*recorder, error) {
	f, err := os.CreateTemp(dir, "rowfate-replay-*")
	if err != nil {
		return nil, fmt.Errorf("replay file: %w", err)
	}
	return &recorder{Reader: r, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Next returns the reader's next record, and records it.
func (r *recorder) Next() (rows.Record, error) {
	rec, err := r.Reader.Next()
	if err == nil && r.err == nil {
		r.buf = appendRecord(r.buf[:0], rec)
		_, r.err = r.w.Write(binary.AppendUvarint(nil, uint64(len(r.buf))))
		if r.err == nil {
			_, r.err = r.w.Write(r.buf)
		}
	}
	return rec, err
}

// replay returns the records recorded, once the reader is read to its
// end; nil when the recording failed. The caller closes it.
func (r *recorder) replay() *replay {
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err != nil {
		r.discard()
		return nil
	}
	return &replay{f: r.f, header: r.Header(), info: r.Info(), skipped: r.SkippedEmpty()}
}

// discard removes the file.
func (r *recorder) discard() {
	r.f.Close()
	os.Remove(r.f.Name())
}

// replay is a recorded pass: what the reader said of the file, and its
// records in the file.
type replay struct {
	f       *os.File
	header  []string
	info    rows.SourceInfo
	skipped int64
}

func (p *replay) close() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// open returns a reader of the records from the first.
func (p *replay) open() rows.Reader {
	return &replayReader{p: p, r: bufio.NewReaderSize(io.NewSectionReader(p.f, 0, 1<<62), 256<<10)}
}

// replayReader reads a replay's records back.
type replayReader struct {
	p   *replay
	r   *bufio.Reader
	buf []byte
}

func (r *replayReader) Header() []string      { return r.p.header }
func (r *replayReader) Info() rows.SourceInfo { return r.p.info }
func (r *replayReader) SkippedEmpty() int64   { return r.p.skipped }
func (r *replayReader) Close() error          { return nil }

func (r *replayReader) Next() (rows.Record, error) {
	n, err := binary.ReadUvarint(r.r)
	if errors.Is(err, io.EOF) {
		return rows.Record{}, io.EOF
	}
	if err != nil || n > 1<<31 {
		return rows.Record{}, fmt.Errorf("replay: %w", errReplay)
	}
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return rows.Record{}, fmt.Errorf("replay: %w", err)
	}
	d := recordDecoder{s: string(r.buf)}
	rec := d.record()
	if d.bad {
		return rows.Record{}, fmt.Errorf("replay: %w", errReplay)
	}
	return rec, nil
}

var errReplay = errors.New("the recorded rows are damaged")

// appendRecord encodes a record: numbers as varints, strings and lists
// prefixed with their lengths.
func appendRecord(b []byte, rec rows.Record) []byte {
	b = binary.AppendVarint(b, rec.Row)
	b = binary.AppendVarint(b, rec.Line)
	b = appendStrings(b, rec.Values)
	b = binary.AppendUvarint(b, uint64(len(rec.Errors)))
	for _, e := range rec.Errors {
		b = binary.AppendVarint(b, e.Row)
		b = appendString(b, e.Column)
		b = appendString(b, e.Field)
		b = appendString(b, string(e.Code))
		b = appendString(b, e.Message)
		b = binary.AppendUvarint(b, uint64(len(e.Hints)))
		for _, h := range e.Hints {
			b = appendString(b, string(h.Option))
			b = appendStrings(b, h.Values)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// recordDecoder decodes what appendRecord wrote; the strings it returns
// are slices of s, one allocation per record.
type recordDecoder struct {
	s   string
	bad bool
}

func (d *recordDecoder) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(d.s) == 0 {
			d.bad = true
			return 0
		}
		c := d.s[0]
		d.s = d.s[1:]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	d.bad = true
	return 0
}

func (d *recordDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *recordDecoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		d.bad = true
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

func (d *recordDecoder) strs() []string {
	n := d.uvarint()
	if n == 0 || n-1 > uint64(len(d.s)) {
		d.bad = d.bad || n != 0
		return nil
	}
	out := make([]string, n-1)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *recordDecoder) record() rows.Record {
	rec := rows.Record{Row: d.varint(), Line: d.varint(), Values: d.strs()}
	n := d.uvarint()
	if n > uint64(len(d.s)) {
		d.bad = true
		return rec
	}
	for range n {
		e := rows.FieldError{Row: d.varint(), Column: d.str(), Field: d.str(), Code: rows.Code(d.str()), Message: d.str()}
		hints := d.uvarint()
		if hints > uint64(len(d.s)) {
			d.bad = true
			return rec
		}
		for range hints {
			e.Hints = append(e.Hints, rows.Hint{Option: rows.Option(d.str()), Values: d.strs()})
		}
		rec.Errors = append(rec.Errors, e)
	}
	return rec
}
