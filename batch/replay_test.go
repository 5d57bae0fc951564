package batch

import (
	"errors"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// sliceReader is a rows.Reader over records in memory.
type sliceReader struct {
	recs []rows.Record
	i    int
}

func (r *sliceReader) Header() []string    { return []string{"a", "b"} }
func (r *sliceReader) SkippedEmpty() int64 { return 3 }
func (r *sliceReader) Info() rows.SourceInfo {
	return rows.SourceInfo{Format: replayFormat, Sheet: "S"}
}
func (r *sliceReader) Close() error { return nil }
func (r *sliceReader) Next() (rows.Record, error) {
	if r.i == len(r.recs) {
		return rows.Record{}, io.EOF
	}
	r.i++
	return r.recs[r.i-1], nil
}

// TestReplay: the records a first pass recorded read back as they were
// read, with the reader's header, info and skipped rows, as often as the
// replay is opened; closing it removes its file.
func TestReplay(t *testing.T) {
	t.Parallel()
	recs := []rows.Record{
		{Row: 2, Line: 2, Values: []string{"x", ""}},
		{Row: 1 << 40, Line: 7, Values: []string{"", "é\x00"}, Errors: []rows.FieldError{
			{Row: 1 << 40, Column: "a", Field: "A", Code: rows.CodeBadDate, Message: "m"},
			{Code: "c", Hints: []rows.Hint{{Option: rows.OptionDateOrder, Values: []string{"dmy", "mdy"}}, {Option: rows.OptionLocale}}},
		}},
		{Row: 9, Line: 9},
	}
	rec, err := newRecorder(&sliceReader{recs: recs}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := rec.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	p := rec.replay()
	if p == nil {
		t.Fatal("no replay")
	}
	for range 2 {
		r := p.open()
		if r.SkippedEmpty() != 3 || r.Info().Sheet != "S" || !reflect.DeepEqual(r.Header(), []string{"a", "b"}) {
			t.Fatalf("reader facts: %d %+v %q", r.SkippedEmpty(), r.Info(), r.Header())
		}
		var got []rows.Record
		for {
			x, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if !reflect.DeepEqual(got, recs) {
			t.Fatalf("replayed %+v\nwant %+v", got, recs)
		}
	}
	name := p.f.Name()
	p.close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("replay file left: %v", err)
	}
}
