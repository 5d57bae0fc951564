package csvfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

// readProjected reads every record of input with the columns keep
// accepts projected (maxUnread as an import sets it).
func readProjected(t *testing.T, input string, keep func(int) bool, maxUnread int) []rows.Record {
	t.Helper()
	r, err := NewReader(strings.NewReader(input), "test.csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	var _ rows.Projector = r
	r.Project(keep, maxUnread)
	return drain(t, r)
}

// drain reads r to its end.
func drain(t *testing.T, r *Reader) []rows.Record {
	t.Helper()
	var out []rows.Record
	if err := each(r, func(rec rows.Record) { out = append(out, rec) }); err != nil {
		t.Fatal(err)
	}
	return out
}

// each hands f every record of r, up to the end or an error.
func each(r *Reader, f func(rows.Record)) error {
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		f(rec)
	}
}

// TestProjectDropsOnlyWhatItMayAndKeepsTheChecks: a projection changes
// what a record holds in the columns it drops, and nothing else: the
// same rows come back, with the same errors (a dropped cell too long, with
// a NUL or bad bytes still makes the row invalid), a row whose only
// content was dropped is still a row, and a dropped cell past the header
// is still a ragged row.
func TestProjectDropsOnlyWhatItMayAndKeepsTheChecks(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5000)
	huge := strings.Repeat("y", 70_000) // over MaxCellBytes
	input := "email,name,notes\n" +
		"a@x,A,short\n" + // under maxUnread: kept as it is
		"b@x,B," + big + "\n" +
		"c@x,C," + huge + "\n" +
		"d@x,D,nul\x00" + big + "\n" +
		"e@x,E,bad\xff" + big + "\n" +
		",," + big + "\n" + // only dropped content: a row, not a blank line
		"f@x,F,," + big + "\n" + // a dropped cell past the header: ragged
		"g@x,G,,   \n" + // a blank cell past the header: not ragged
		"\"h@x\",\"H\",\"" + big + "\"\n"
	keep := func(i int) bool { return i < 2 }
	plain, err := func() ([]rows.Record, error) {
		_, recs, err := readAll(t, input, nil)
		return recs, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	got := readProjected(t, input, keep, 4096)
	if len(got) != len(plain) {
		t.Fatalf("projected: %d records, plain: %d", len(got), len(plain))
	}
	trimmed := 0
	for i, g := range got {
		p := plain[i]
		if g.Row != p.Row || g.Line != p.Line {
			t.Errorf("record %d: row %d line %d, plain row %d line %d", i, g.Row, g.Line, p.Row, p.Line)
		}
		if !reflect.DeepEqual(g.Errors, p.Errors) {
			t.Errorf("row %d: errors\n%v\nplain\n%v", g.Row, g.Errors, p.Errors)
		}
		if len(g.Values) != len(p.Values) {
			t.Fatalf("row %d: %d cells, plain %d", g.Row, len(g.Values), len(p.Values))
		}
		unread := 0
		for j, v := range p.Values {
			if !keep(j) {
				unread += len(v)
			}
		}
		for j, v := range g.Values {
			want := p.Values[j]
			if g.Trimmed && !keep(j) {
				want = ""
			}
			if v != want {
				t.Errorf("row %d cell %d: %.20q, want %.20q", g.Row, j, v, want)
			}
		}
		if g.Trimmed {
			trimmed++
		}
		// The rule is keptCells': a row is trimmed when its unread cells
		// hold more than maxUnread bytes as read, before a too-long cell
		// is emptied.
		if wide := p.Row != 2 && p.Row != 9; g.Trimmed != wide {
			t.Errorf("row %d: trimmed %v (plain unread %d bytes)", g.Row, g.Trimmed, unread)
		}
	}
	if trimmed != 7 {
		t.Errorf("%d rows trimmed, want 7", trimmed)
	}
	codes := func(r rows.Record) []rows.Code {
		var out []rows.Code
		for _, e := range r.Errors {
			out = append(out, e.Code)
		}
		return out
	}
	for row, want := range map[int64][]rows.Code{
		4: {rows.CodeCellTooLong}, 5: {rows.CodeNulByte}, 6: {rows.CodeBadEncoding},
		8: {rows.CodeRaggedRow},
	} {
		if c := codes(got[row-2]); !slices.Equal(c, want) {
			t.Errorf("row %d: codes %v, want %v", row, c, want)
		}
	}
}

// TestProjectDoesNotCopyWhatItDrops: reading rows that carry 256 KiB
// each in a column nobody reads allocates a small part of the file,
// where every row's cells used to be copied out whole. TotalAlloc counts
// bytes allocated, whatever the collector does, so the figure does not
// depend on the machine's load; the test is not parallel, so that no
// other test's allocations count.
func TestProjectDoesNotCopyWhatItDrops(t *testing.T) {
	const n = 200
	var b strings.Builder
	b.WriteString("email,name,notes\n")
	wide := strings.Repeat("z", 256<<10)
	for i := range n {
		b.WriteString("u")
		b.WriteString(strings.Repeat("1", i%7))
		b.WriteString("@x,Name," + wide + "\n")
	}
	input := b.String()
	measure := func(project bool) uint64 {
		r, err := NewReader(strings.NewReader(input), "wide.csv", &Options{MaxLineBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if project {
			r.Project(func(i int) bool { return i < 2 }, 4096)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		recs := drain(t, r)
		runtime.ReadMemStats(&after)
		if len(recs) != n {
			t.Fatalf("%d rows read, want %d", len(recs), n)
		}
		for _, rec := range recs {
			if project && (!rec.Trimmed || rec.Values[2] != "") {
				t.Fatalf("row %d not trimmed", rec.Row)
			}
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	plain, projected := measure(false), measure(true)
	t.Logf("allocated reading %d MiB: %d KiB plain, %d KiB projected", len(input)>>20, plain>>10, projected>>10)
	if projected > uint64(len(input))/20 {
		t.Errorf("projected read allocated %d KiB for a %d KiB file: the dropped cells were copied", projected>>10, len(input)>>10)
	}
}

// readEach reads every record of data, a deep copy of each taken before
// the next is read, with Transient when transient; it stops at an error.
func readEach(data []byte, opts *Options, transient bool) ([]rows.Record, error) {
	r, err := NewReader(bytes.NewReader(data), "t.csv", opts)
	if err != nil {
		return nil, err
	}
	if transient {
		r.Transient()
	}
	var out []rows.Record
	err = each(r, func(rec rows.Record) {
		rec.Values = slices.Clone(rec.Values)
		for i, v := range rec.Values {
			rec.Values[i] = strings.Clone(v)
		}
		out = append(out, rec)
	})
	return out, err
}

// sameTransient checks that a transient read of data returns what a
// plain one does, record for record.
func sameTransient(t *testing.T, data []byte, opts *Options) {
	t.Helper()
	plain, perr := readEach(data, opts, false)
	views, verr := readEach(data, opts, true)
	if fmt.Sprint(perr) != fmt.Sprint(verr) || !reflect.DeepEqual(plain, views) {
		t.Fatalf("transient read differs:\n%+v (%v)\nplain:\n%+v (%v)", views, verr, plain, perr)
	}
}

// TestTransientReadsTheSame: records that are views of the reader's
// buffers hold what copies hold, also when the reader reads a record
// ahead to see whether a second table starts (a blank line, then a row
// of another width), while the record before it is still being read.
func TestTransientReadsTheSame(t *testing.T) {
	t.Parallel()
	for _, input := range []string{
		"email,name\na@x,A\nb@x,B\n",
		"email,name,amount\na@x,A,1\n\nx,y\nz,w\n\nb@x,B,2\nc@x,C,3\n",
		"email,name,amount\na@x,A,1\n\nwidth,two\nb@x,B,2\n",
		"email,name\na@x,\"multi\nline\"\n\"bad\"x,1\nc@x,C\n",
		"email,name\na\x00b,A\n\xff,B\n",
		"email,name\na@x,A\n\nb@x,B\n\nemail,name\nc@x,C\n",
	} {
		sameTransient(t, []byte(input), nil)
	}
}
