// Command xlsx measures reading and writing large XLSX files next to the
// same in CSV, one operation per process so that the peak RSS (measured
// with /usr/bin/time -v) is the operation's own:
//
//	go build -o /tmp/xlsxbench ./bench/xlsx
//	/usr/bin/time -v /tmp/xlsxbench write-xlsx -rows 1000000 -file /tmp/c.xlsx
//	/usr/bin/time -v /tmp/xlsxbench read-xlsx -file /tmp/c.xlsx
//	/usr/bin/time -v /tmp/xlsxbench read-excelize -file /tmp/c.xlsx
//	/usr/bin/time -v /tmp/xlsxbench write-xlsx-sst -rows 1000000 -file /tmp/s.xlsx
//	/usr/bin/time -v /tmp/xlsxbench read-xlsx -file /tmp/s.xlsx
//	/usr/bin/time -v /tmp/xlsxbench write-csv -rows 1000000 -file /tmp/c.csv
//	/usr/bin/time -v /tmp/xlsxbench read-csv -file /tmp/c.csv
//	/usr/bin/time -v /tmp/xlsxbench export -rows 1000000 -file /tmp/e.xlsx
//
// read-excelize reads the same file with excelize's own streaming iterator
// (Rows, Next, Columns with RawCellValue, the call the old Reader made),
// the baseline of read-xlsx's rows/s.
//
// The rows are customer-like (email, name, country, date, amount).
// write-xlsx writes with xlsxfile.Writer (inline strings); write-xlsx-sst
// writes the parts by hand with every text a shared string, as Excel does,
// which is what costs a reader memory (the shared strings table). export
// runs batch.Export from a Go iterator into a fresh SQLite store, so it
// includes persisting every row's outcome.
package main

import (
	"archive/zip"
	"bufio"
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

	"github.com/xuri/excelize/v2"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/rows/csvfile"
	"github.com/rowfate/rowfate/rows/xlsxfile"
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
		log.Fatal("usage: xlsx write-xlsx|write-xlsx-sst|read-xlsx|read-excelize|write-csv|read-csv|export -rows N -file PATH")
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
	case "write-xlsx-sst":
		count, err = writeXLSXShared(*file, *n)
	case "write-csv":
		count, err = writeCSV(*file, *n)
	case "read-xlsx":
		count, err = read(*file, true)
	case "read-excelize":
		count, err = readExcelize(*file)
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
	w, err := xlsxfile.NewWriter(f, header, &xlsxfile.WriterOptions{TmpDir: filepath.Dir(path)})
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
	w, err := csvfile.NewWriter(f, nil)
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
		xr, err := xlsxfile.NewReader(f, path, &xlsxfile.Options{TmpDir: filepath.Dir(path)})
		if err != nil {
			return 0, err
		}
		defer xr.Close()
		r = xr
	} else {
		cr, err := csvfile.NewReader(f, path, nil)
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

// readExcelize reads the first sheet with excelize's streaming iterator,
// as a program that uses excelize directly would, and counts the data rows.
func readExcelize(path string) (int64, error) {
	f, err := excelize.OpenFile(path, excelize.Options{TmpDir: filepath.Dir(path)})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	it, err := f.Rows(f.GetSheetName(0))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64 = -1 // the header
	for it.Next() {
		if _, err := it.Columns(excelize.Options{RawCellValue: true}); err != nil {
			return n, err
		}
		n++
	}
	return n, it.Error()
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
	b, err := batch.Export(ctx, e, kind, batch.ExportParams{DestName: path, Dest: f, Write: rows.WriteOptions{TmpDir: filepath.Dir(path)}})
	if err != nil {
		return 0, err
	}
	return b.Counts[rows.StateSucceeded], nil
}

// writeXLSXShared writes the sheet the way Excel does: every text cell a
// shared string (emails and names all distinct), dates and amounts as
// styled numbers. The parts are written by hand, streaming, because
// excelize's StreamWriter writes inline strings only.
func writeXLSXShared(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	put := func(name, body string) error {
		w, err := zw.Create(name)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, body)
		return err
	}
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	for _, p := range [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook ` + ns + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		{"xl/styles.xml", `<?xml version="1.0" encoding="UTF-8"?><styleSheet ` + ns + `><fonts count="1"><font/></fonts><fills count="1"><fill/></fills><borders count="1"><border/></borders><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>`},
	} {
		if err := put(p[0], p[1]); err != nil {
			return 0, err
		}
	}
	// Shared strings: per row an email and a name, then the countries.
	w, err := zw.Create("xl/sharedStrings.xml")
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?><sst %s count="%d" uniqueCount="%d">`, ns, 3*n, 2*n+len(countries))
	for i := range n {
		c := row(i)
		fmt.Fprintf(bw, "<si><t>%s</t></si><si><t>%s</t></si>", c.Email, c.Name)
	}
	for _, c := range countries {
		fmt.Fprintf(bw, "<si><t>%s</t></si>", c)
	}
	bw.WriteString("</sst>")
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	w, err = zw.Create("xl/worksheets/sheet1.xml")
	if err != nil {
		return 0, err
	}
	bw = bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?><worksheet %s><sheetData>`, ns)
	bw.WriteString(`<row r="1"><c r="A1" t="inlineStr"><is><t>email</t></is></c><c r="B1" t="inlineStr"><is><t>name</t></is></c><c r="C1" t="inlineStr"><is><t>country</t></is></c><c r="D1" t="inlineStr"><is><t>signup_date</t></is></c><c r="E1" t="inlineStr"><is><t>amount</t></is></c></row>`)
	for i := range n {
		c := row(i)
		r := i + 2
		serial := c.SignupDate.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Hours() / 24
		fmt.Fprintf(bw, `<row r="%d"><c r="A%d" t="s"><v>%d</v></c><c r="B%d" t="s"><v>%d</v></c><c r="C%d" t="s"><v>%d</v></c><c r="D%d" s="1"><v>%d</v></c><c r="E%d"><v>%s</v></c></row>`,
			r, r, 2*i, r, 2*i+1, r, 2*n+i%len(countries), r, int(serial), r, strconv.FormatFloat(c.Amount, 'f', -1, 64))
	}
	bw.WriteString(`</sheetData></worksheet>`)
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return int64(n), zw.Close()
}
