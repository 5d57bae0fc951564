package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/fileformat"
)

// FuzzDryRunOutcomes feeds arbitrary files through every phase of the
// customers kind (reading, binding, tags, hooks, the natural key) and
// checks that each data row the reader yields gets exactly one outcome,
// that the engine never panics, and that every error names its row.
func FuzzDryRunOutcomes(f *testing.F) {
	for _, seed := range []string{
		"email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,1.50\n",
		"email;name;signup_date\na@example.com;Ann;45292\nA@example.com;Ann;2020-01-02\n",
		"\xff\xfee\x00m\x00a\x00i\x00l\x00,\x00n\x00a\x00m\x00e\x00,\x00s\x00i\x00g\x00n\x00u\x00p\x00_\x00d\x00a\x00t\x00e\x00\n\x00",
		"email,name,signup_date\nx,\x00,60\n,,\n'=1,'-2,'@3\n",
		"email,name,signup_date,amount\nb@example.com,B\xe9b,2020-01-02,12345678901234567890\n",
		"email,name,signup_date\n\"a@example.com\",\"multi\nline\",2020-01-02\n",
		"0\nmAil,nAme,signupdAte", // a title above the kind's header: no data row
	} {
		f.Add([]byte(seed))
	}
	reg := batch.NewRegistry()
	if err := batch.Register(reg, customers.Kind(nil, customers.SQLite)); err != nil {
		f.Fatal(err)
	}
	read := rows.ReadOptions{MaxLineBytes: 512, MaxCellBytes: 64, TmpDir: f.TempDir()}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := reg.DryRun(context.Background(), batch.ImportParams{Kind: customers.Name, SourceName: "fuzz.csv", Source: bytes.NewReader(data), Read: read})
		if err != nil {
			var fe *rows.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *rows.FileError", err, err)
			}
			return
		}
		// Count the records the reader yields on its own, in the format
		// the engine detected, under the header the engine found (the
		// kind's columns may name a row below titles as the header), with
		// the delimiter that header was found with: sniffed from the lines
		// alone, a title and a data row may say another.
		alone := read
		alone.HeaderRow = res.HeaderRow
		if res.Delimiter != "" {
			if alone.Delimiter, err = fileformat.Delimiter(res.Delimiter); err != nil {
				t.Fatalf("the dry run's delimiter %q: %v", res.Delimiter, err)
			}
		}
		r, err := fileformat.Open(bufio.NewReader(bytes.NewReader(data)), "fuzz.csv", "", alone)
		if err != nil {
			t.Fatalf("the dry run read the file, the reader alone did not: %v", err)
		}
		defer r.Close()
		var n int64
		for {
			if _, err := r.Next(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("the dry run read the file, the reader alone did not: %v", err)
			}
			n++
		}
		if got := res.Counts[rows.StateValid] + res.Counts[rows.StateInvalid]; got != n || res.Counts.Total() != n {
			t.Fatalf("%d outcomes (%v) for %d rows", got, res.Counts, n)
		}
		for _, fe := range res.Errors {
			if fe.Row < 2 || fe.Code == "" || fe.Message == "" {
				t.Fatalf("malformed error %+v", fe)
			}
		}
	})
}
