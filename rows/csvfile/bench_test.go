package csvfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
)

// benchCSV returns a UTF-8, comma-separated file of n customers-like rows
// under the header email,name,country,signup_date,amount; one name in ten
// is quoted (it holds a comma), as exports of real names are.
func benchCSV(n int) []byte {
	var buf bytes.Buffer
	buf.WriteString("email,name,country,signup_date,amount\n")
	for i := range n {
		name := fmt.Sprintf("Customer %d", i)
		if i%10 == 0 {
			name = fmt.Sprintf(`"Doe, Jane %d"`, i)
		}
		fmt.Fprintf(&buf, "user%d@example.com,%s,FR,2021-%02d-%02d,%d.%02d\n",
			i, name, i%12+1, i%28+1, i%1000, i%100)
	}
	return buf.Bytes()
}

// BenchmarkCSVRead measures the CSV reader on an in-memory file of 10,000
// customers-like rows: one op = the whole file read, from NewReader (with
// the options an import with no flags gives: encoding and delimiter
// detected) to io.EOF. MB/s is over the file's bytes; rows/s over its data
// rows. For real figures:
//
//	go test -run '^$' -bench CSVRead -benchmem -count 6 ./rows/csvfile
func BenchmarkCSVRead(b *testing.B) {
	const n = 10_000
	data := benchCSV(n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var read int64
	for b.Loop() {
		r, err := csvfile.NewReader(bytes.NewReader(data), "bench.csv", csvfile.OptionsFrom(rows.ReadOptions{}))
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if len(rec.Errors) > 0 || len(rec.Values) != 5 {
				b.Fatalf("row %d: %d values, errors %v", rec.Row, len(rec.Values), rec.Errors)
			}
			got++
		}
		if got != n {
			b.Fatalf("read %d rows, want %d", got, n)
		}
		read += int64(got)
	}
	b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "rows/s")
}
