// Command xlsx measures reading and writing large XLSX files next to the
// same in CSV, one operation per process so that the peak RSS (measured
// with /usr/bin/time -v) is the operation's own:
//
//	go build -o /tmp/xlsxbench ./bench/xlsx
//	/usr/bin/time -v /tmp/xlsxbench write-xlsx -rows 1000000 -file /tmp/c.xlsx
//	/usr/bin/time -v /tmp/xlsxbench read-xlsx -file /tmp/c.xlsx
//	/usr/bin/time -v /tmp/xlsxbench write-csv -rows 1000000 -file /tmp/c.csv
//	/usr/bin/time -v /tmp/xlsxbench read-csv -file /tmp/c.csv
//	/usr/bin/time -v /tmp/xlsxbench export -rows 1000000 -file /tmp/e.xlsx
//
// The rows are customer-like (email, name, country, date, amount). export
// runs batch.Export from a Go iterator into a fresh SQLite store, so it
// includes persisting every row's outcome.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/sqlite"
)

type customer struct {
	Email      string    `col:"email"`
	Name       string    `col:"name"`
	Country    string    `col:"country"`
	SignupDate time.Time `col:"signup_date"`
	Amount     float64   `col:"amount"`
}

var (
	header    = []string{"email", "name", "country", "signup_date", "amount"}
	countries = []string{"DE", "FR", "PT", "US", "PL", "AU", "NL", "GB"}
	base      = time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
)

func row(i int) customer {
	return customer{
		Email:      "customer" + strconv.Itoa(i) + "@example.com",
		Name:       "Customer " + strconv.Itoa(i),
		Country:    countries[i%len(countries)],
		SignupDate: base.AddDate(0, 0, i%5000),
		Amount:     float64(i%100000) / 100,
	}
}

func cells(c customer, out []rows.Cell) {
	out[0] = rows.Cell{Text: c.Email}
	out[1] = rows.Cell{Text: c.Name}
	out[2] = rows.Cell{Text: c.Country}
	out[3] = rows.Cell{Type: rows.CellDate, Text: c.SignupDate.Format("2006-01-02"), Time: c.SignupDate}
	out[4] = rows.Cell{Type: rows.CellNumber, Text: strconv.FormatFloat(c.Amount, 'f', -1, 64)}
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: xlsx write-xlsx|read-xlsx|write-csv|read-csv|export -rows N -file PATH")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	n := fs.Int("rows", 1_000_000, "rows to write")
	file := fs.String("file", "", "file to write or read")
	profile := fs.String("cpuprofile", "", "write a CPU profile here")
	fs.Parse(os.Args[2:])
	if *profile != "" {
		pf, err := os.Create(*profile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(pf)
		defer pprof.StopCPUProfile()
	}
	if *file == "" {
		log.Fatal("-file is required")
	}
	start := time.Now()
	var count int64
	var err error
	switch os.Args[1] {
	case "write-xlsx":
		count, err = writeXLSX(*file, *n)
	case "write-csv":
		count, err = writeCSV(*file, *n)
	case "read-xlsx":
		count, err = read(*file, true)
	case "read-csv":
		count, err = read(*file, false)
	case "export":
		count, err = export(*file, *n)
	default:
		log.Fatalf("unknown operation %q", os.Args[1])
	}
	if err != nil {
		log.Print(err)
		return
	}
	d := time.Since(start)
	fmt.Printf("%s: %d rows in %.2fs = %.0f rows/s\n", os.Args[1], count, d.Seconds(), float64(count)/d.Seconds())
}

func writeXLSX(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := rows.NewXLSXWriter(f, header, &rows.XLSXWriterOptions{TmpDir: filepath.Dir(path)})
	if err != nil {
		return 0, err
	}
	cs := make([]rows.Cell, len(header))
	for i := range n {
		cells(row(i), cs)
		if err := w.WriteRow(cs); err != nil {
			return 0, err
		}
	}
	return int64(n), w.Close()
}

func writeCSV(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := rows.NewCSVWriter(f, nil)
	if err != nil {
		return 0, err
	}
	if err := w.Write(header); err != nil {
		return 0, err
	}
	cs := make([]rows.Cell, len(header))
	rec := make([]string, len(header))
	for i := range n {
		cells(row(i), cs)
		for j, c := range cs {
			rec[j] = c.Text
		}
		if err := w.Write(rec); err != nil {
			return 0, err
		}
	}
	return int64(n), w.Flush()
}

func read(path string, xlsx bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var r rows.Reader
	if xlsx {
		xr, err := rows.NewXLSXReader(f, path, &rows.XLSXOptions{TmpDir: filepath.Dir(path)})
		if err != nil {
			return 0, err
		}
		defer xr.Close()
		r = xr
	} else {
		cr, err := rows.NewCSVReader(f, path, nil)
		if err != nil {
			return 0, err
		}
		r = cr
	}
	var n int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(rec.Errors) > 0 {
			return n, fmt.Errorf("row %d: %v", rec.Row, rec.Errors)
		}
		n++
	}
}

func export(path string, n int) (int64, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp(filepath.Dir(path), "export-db-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(filepath.Join(dir, "rowfate.db"))
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return 0, err
	}
	e, err := batch.NewEngine(batch.Config{Store: s, Registry: batch.NewRegistry()})
	if err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	kind := batch.ExportKind[customer]{
		Name: "customers",
		RowsFunc: func(context.Context) iter.Seq2[customer, error] {
			return func(yield func(customer, error) bool) {
				for i := range n {
					if !yield(row(i), nil) {
						return
					}
				}
			}
		},
	}
	b, err := batch.Export(ctx, e, kind, batch.ExportParams{DestName: path, Dest: f, TmpDir: filepath.Dir(path)})
	if err != nil {
		return 0, err
	}
	return b.Counts[rows.StateSucceeded], nil
}
