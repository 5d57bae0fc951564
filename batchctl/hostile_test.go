package batchctl

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// hostileLimit is the peak RSS an import of any hostile file may reach.
const hostileLimit = 256 << 20

// TestHostileFiles imports every file of the CSV and XLSX corpora and
// generated hostile ones with a separate batchctl process each: every one
// is rejected (exit 4, naming the file, no batch written) or imported with
// its bad rows flagged (exit 3, each error naming its row and column or
// code), never a panic or an operational error, and the process's peak
// RSS stays under 256 MiB.
func TestHostileFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("imports every hostile file in a process of its own")
	}
	bin := buildBatchctl(t)
	dir := t.TempDir()
	var files []string
	for _, pattern := range []string{"../fixtures/csv/*.csv", "../fixtures/xlsx/*.xlsx"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	files = append(files, generateHostile(t, dir)...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "h.db")
			cmd, peak := peakRSSCommand(t, bin, "import", "customers", f, "--database", db, "--no-work")
			cmd.Env = append(cmd.Env, "DATABASE_URL=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			rss := peak()
			if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine ") {
				t.Fatalf("panicked: %s", stderr.String())
			}
			if rss > hostileLimit {
				t.Errorf("peak RSS %d MiB, over %d MiB", rss>>20, hostileLimit>>20)
			}
			switch code {
			case exitRejected:
				if !strings.Contains(stderr.String(), filepath.Base(f)) {
					t.Errorf("the rejection does not name the file: %s", stderr.String())
				}
				if _, err := os.Stat(db); err == nil {
					if r := run(t, "batches", "-o", "json", "--database", db); strings.TrimSpace(r.stdout) != "[]" && r.code == exitOK {
						t.Errorf("a rejected file left batches: %s", r.stdout)
					}
				}
			case exitRows, exitOK:
				r := run(t, "rows", "1", "--state", "invalid", "-o", "json", "--limit", "100000", "--database", db)
				var page []struct {
					RowNo  int64 `json:"row_no"`
					Errors []struct {
						Row    int64  `json:"row"`
						Column string `json:"column"`
						Code   string `json:"code"`
					} `json:"errors"`
				}
				if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
					t.Fatalf("rows: %v: %s", err, r)
				}
				for _, row := range page {
					if len(row.Errors) == 0 {
						t.Errorf("invalid row %d has no error", row.RowNo)
					}
					for _, e := range row.Errors {
						if e.Row != row.RowNo || e.Code == "" {
							t.Errorf("row %d: error %+v names no row or code", row.RowNo, e)
						}
					}
				}
			default:
				t.Fatalf("exit %d (%v), want 3 or 4:\n%s%s", code, err, stdout.String(), stderr.String())
			}
			t.Logf("exit %d, peak RSS %d MiB: %s", code, rss>>20, firstLine(stderr.String()))
		})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// generateHostile writes the hostile cases no fixture holds.
func generateHostile(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	header := "email,name,country,signup_date,amount\n"
	write("zero_bytes.csv", nil)
	// 16,384 columns: Excel's widest sheet, in a CSV.
	var wide strings.Builder
	wide.WriteString("email,name,country,signup_date,amount")
	for i := 5; i < 16384; i++ {
		fmt.Fprintf(&wide, ",c%d", i)
	}
	wide.WriteString("\nann@example.com,Ann,PT,2020-01-01,1.00\n")
	write("cols_16384.csv", []byte(wide.String()))
	// UTF-16 without a byte order mark.
	u := utf16.Encode([]rune(header + "ann@example.com,Ann,PT,2020-01-01,1.00\n"))
	le := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(le[2*i:], c)
	}
	write("utf16le_no_bom.csv", le)
	// Binary garbage, and a PNG named .csv.
	garbage := make([]byte, 1<<20)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rnd.UintN(256))
	}
	write("garbage.csv", garbage)
	write("photo.csv", append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), garbage[:4096]...))
	// Invalid UTF-8, a NUL and a bare CR in one data row.
	write("mixed_bytes.csv", []byte(header+"ann@example.com,An\xffn,PT,2020-01-01,1.00\nbob@example.com,B\x00b,PT,2020-01-01,2.00\r\n"))
	// A 2 GB sparse file: all NUL bytes, none on disk.
	sparse := filepath.Join(dir, "sparse_2gb.csv")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out = append(out, sparse)
	// A workbook whose sheet nests elements 100,000 deep.
	out = append(out, deepXLSX(t, dir))
	return out
}

// deepXLSX copies the customers workbook with its sheet replaced by
// deeply nested XML.
func deepXLSX(t *testing.T, dir string) string {
	t.Helper()
	src, err := zip.OpenReader("../fixtures/xlsx/customers.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	p := filepath.Join(dir, "deep_xml.xlsx")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := zip.NewWriter(f)
	for _, zf := range src.File {
		dst, err := w.Create(zf.Name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(zf.Name, "xl/worksheets/sheet") {
			// Numbered, so that it does not compress like a zip bomb and
			// reaches the sheet reader.
			const depth = 100_000
			dst.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`))
			for i := range depth {
				fmt.Fprintf(dst, `<row r="%d" x="%x"><c r="A%d">`, i+1, rnd64(i), i+1)
			}
			dst.Write(bytes.Repeat([]byte("</c></row>"), depth))
			dst.Write([]byte(`</sheetData></worksheet>`))
			continue
		}
		r, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(dst, r)
		r.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// rnd64 is a number that differs from row to row.
func rnd64(i int) uint64 { return uint64(i)*0x9e3779b97f4a7c15 ^ 0xdeadbeef }
