package batch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/rows"
)

// pollutedFile is a customers CSV file with pollutions of the kinds
// clients send, and what reading it must give: the clean rows' cells, and
// the raw text of each polluted line.
type pollutedFile struct {
	name string
	data []byte
	read rows.ReadOptions
	// clean are the cells of each clean data row, by row number.
	clean map[int64][]string
	// polluted is the raw text of each polluted line, by row number: the
	// row must be invalid and keep that text (its one cell or, when the
	// line read as cells of the wrong number, its cells as the file wrote
	// them).
	polluted map[int64]string
	// second are the rows of a second table: flagged second_table.
	second map[int64]bool
	style  *csvStyle
}

// pollution is one way to spoil a line: it returns the line as written
// and whether it can still be read as its clean row (a bare quote in an
// unquoted cell, a trailing separator).
type pollution struct {
	name string
	f    func(cells []string, w *csvStyle) (line string, readable bool)
}

// csvStyle is how a file quotes its cells.
type csvStyle struct {
	quote  byte
	escape byte
	sep    string
}

// line writes cells as one CSV line in the style: a cell with the
// separator, a quote or a line end is quoted, its quotes doubled or
// escaped.
func (w *csvStyle) line(cells []string) string {
	out := make([]string, len(cells))
	for i, c := range cells {
		if strings.ContainsAny(c, w.sep+string(w.quote)+"\r\n") {
			q := string(w.quote)
			esc := q + q
			if w.escape != 0 {
				c = strings.ReplaceAll(c, string(w.escape), string(w.escape)+string(w.escape))
				esc = string(w.escape) + q
			}
			c = q + strings.ReplaceAll(c, q, esc) + q
		}
		out[i] = c
	}
	return strings.Join(out, w.sep)
}

// other is a delimiter other than the file's.
func (w *csvStyle) other() string {
	if w.sep == ";" {
		return "|"
	}
	return ";"
}

var pollutions = []pollution{
	{"stray quote in a quoted cell", func(c []string, w *csvStyle) (string, bool) {
		return fmt.Sprintf("%s%s\"%s, \"%s\" Jr\"%s%s", c[0], w.sep, c[1], "Kid", w.sep, strings.Join(c[2:], w.sep)), false
	}},
	{"bare quote in an unquoted cell", func(c []string, w *csvStyle) (string, bool) {
		c[1] = strings.ReplaceAll(c[1], ",", "") + ` 5" tall`
		return w.line(c), true
	}},
	{"row with another delimiter", func(c []string, w *csvStyle) (string, bool) {
		return strings.Join(c, w.other()), false
	}},
	{"row with another delimiter, quoted", func(c []string, w *csvStyle) (string, bool) {
		return `"` + strings.Join(c, `"`+w.other()+`"`) + `"`, false
	}},
	{"missing separator", func(c []string, w *csvStyle) (string, bool) {
		return w.line(c[:2]) + w.sep + c[2] + c[3] + w.sep + c[4], false
	}},
	{"extra separator", func(c []string, w *csvStyle) (string, bool) {
		return w.line(c[:3]) + w.sep + "x" + w.sep + w.line(c[3:]), false
	}},
	{"trailing separator", func(c []string, w *csvStyle) (string, bool) {
		return w.line(c) + w.sep, true
	}},
	{"opening quote and fewer separators", func(c []string, w *csvStyle) (string, bool) {
		return c[0] + w.sep + `"` + strings.ReplaceAll(c[1], ",", "") + w.sep + strings.Join(c[3:], w.sep), false
	}},
	{"bare CR in the line", func(c []string, w *csvStyle) (string, bool) {
		return w.line(c[:2]) + "\r" + w.line(c[2:]), false
	}},
}

var pollutedNames = []string{"Ann Lee", "Doe, Jane", `Ann "Nan" Lee`, "Zoë Straße", "O'Brien, Pat", "José Núñez", "Bob Kay"}

// pollutedCorpus makes n files from clean customers, each with its own
// mix: line ends (LF, CRLF, CR), quoting (", ' and \ escapes, declared),
// one to four polluted lines, and now and then a header alone or a
// second table under the first.
func pollutedCorpus(n int) []pollutedFile {
	rnd := rand.New(rand.NewPCG(27, 5))
	countries := []string{"FR", "DE", "US", "GB", "ES"}
	var out []pollutedFile
	for f := range n {
		pf := pollutedFile{name: fmt.Sprintf("polluted_%03d.csv", f), clean: map[int64][]string{}, polluted: map[int64]string{}, second: map[int64]bool{}}
		w := &csvStyle{quote: '"', sep: ","}
		pf.style = w
		// Apostrophes and backslash escapes are declared in one file of
		// two, detected in the other.
		switch f % 10 {
		case 3:
			w.quote = '\''
			if f%20 == 3 {
				pf.read.Quote = '\''
			}
		case 6:
			w.escape = '\\'
			if f%20 == 6 {
				pf.read.Escape = '\\'
			}
		case 8:
			w.sep, pf.read.Delimiter = ";", ';'
		}
		eol := []string{"\n", "\r\n", "\n", "\r"}[f%4]
		lines := []string{"email" + w.sep + "name" + w.sep + "country" + w.sep + "signup_date" + w.sep + "amount"}
		if f%25 == 24 {
			pf.data = []byte(lines[0] + eol) // a header alone
			out = append(out, pf)
			continue
		}
		rowsN := 20 + rnd.IntN(60)
		bad := map[int]pollution{}
		for range 1 + rnd.IntN(4) {
			p := pollutions[rnd.IntN(len(pollutions))]
			if p.name == "bare CR in the line" && eol == "\r" {
				continue // in a CR file, a CR is a line end
			}
			bad[rnd.IntN(rowsN)] = p
		}
		for i := range rowsN {
			cells := []string{fmt.Sprintf("p%d.%d@example.com", f, i), pollutedNames[rnd.IntN(len(pollutedNames))],
				countries[rnd.IntN(len(countries))], fmt.Sprintf("2024-%02d-%02d", 1+i%12, 1+i%28), fmt.Sprintf("%d.%02d", rnd.IntN(1000), rnd.IntN(100))}
			if i%7 == 3 {
				lines = append(lines, "") // a blank line
			}
			row := int64(len(lines) + 1)
			p, ok := bad[i]
			if !ok {
				pf.clean[row] = cells
				lines = append(lines, w.line(cells))
				continue
			}
			text, readable := p.f(slices.Clone(cells), w)
			if readable {
				pf.clean[row] = readAs(text, w)
			} else {
				pf.polluted[row] = text
			}
			lines = append(lines, text)
		}
		if f%10 == 9 {
			// A second table: a blank line and another shape.
			lines = append(lines, "", "id"+w.sep+"total", "1"+w.sep+"5", "2"+w.sep+"6")
			for i, l := range lines[len(lines)-3:] {
				pf.polluted[int64(len(lines)-2+i)] = l
				pf.second[int64(len(lines)-2+i)] = true
			}
		}
		pf.data = []byte(strings.Join(lines, eol) + eol)
		out = append(out, pf)
	}
	return out
}

// readAs is the cells a readable polluted line must read as: split at
// the separator outside quotes, the trailing empty cell dropped.
func readAs(line string, w *csvStyle) []string {
	var cells []string
	var cur strings.Builder
	inQ := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQ && w.escape != 0 && c == w.escape && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i++
		case inQ && c == w.quote && i+1 < len(line) && line[i+1] == w.quote:
			cur.WriteByte(c)
			i++
		case inQ && c == w.quote:
			inQ = false
		case !inQ && c == w.quote && cur.Len() == 0:
			inQ = true
		case !inQ && strings.HasPrefix(line[i:], w.sep):
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	cells = append(cells, cur.String())
	if len(cells) == 6 && cells[5] == "" {
		cells = cells[:5]
	}
	return cells
}

// TestPollutedCorpus imports 120 polluted customers files on both stores:
// at most one may be refused, every polluted line is an invalid row that
// keeps its raw text, and every clean row is stored as the clean source
// has it and succeeds.
func TestPollutedCorpus(t *testing.T) {
	t.Parallel()
	corpus := pollutedCorpus(120)
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		var refused, badLines, cleanRows int
		for _, pf := range corpus {
			b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: pf.name, Source: bytes.NewReader(pf.data), Read: pf.read})
			var fe *rows.FileError
			if errors.As(err, &fe) {
				refused++
				t.Logf("%s refused: %v", pf.name, err)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			work(t, e, b.ID)
			stored, err := bd.store.RowsList(ctx, driver.RowsListParams{TenantID: batch.DefaultTenant, BatchID: b.ID, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != len(pf.clean)+len(pf.polluted) {
				t.Errorf("%s: %d rows stored, want %d clean and %d polluted", pf.name, len(stored), len(pf.clean), len(pf.polluted))
			}
			for _, r := range stored {
				if want, ok := pf.clean[r.RowNo]; ok {
					cleanRows++
					if r.State != rows.StateSucceeded || !slices.Equal(r.Values, want) {
						t.Errorf("%s: clean row %d is %s %q (%v), want succeeded %q", pf.name, r.RowNo, r.State, r.Values, r.Errors, want)
					}
					continue
				}
				raw, ok := pf.polluted[r.RowNo]
				if !ok {
					t.Errorf("%s: row %d is neither clean nor polluted: %q", pf.name, r.RowNo, r.Values)
					continue
				}
				badLines++
				if pf.second[r.RowNo] && (len(r.Errors) == 0 || r.Errors[0].Code != rows.CodeSecondTable) {
					t.Errorf("%s: row %d of the second table: errors %v, want second_table", pf.name, r.RowNo, r.Errors)
				}
				if r.State != rows.StateInvalid || (!slices.Equal(r.Values, []string{raw}) && pf.style.line(r.Values) != raw) {
					t.Errorf("%s: polluted row %d is %s %q (%v), want invalid keeping %q", pf.name, r.RowNo, r.State, r.Values, r.Errors, raw)
				}
			}
		}
		if refused > 1 {
			t.Errorf("%d of %d files refused, want at most 1", refused, len(corpus))
		}
		t.Logf("%d files, %d refused, %d polluted lines invalid with their text, %d clean rows stored as they are", len(corpus), refused, badLines, cleanRows)
	})
}

// TestUnreadableLineReportAndRerun: an unreadable line's raw text is in the
// error report, under the first column, and the report, corrected, re-runs
// the row.
func TestUnreadableLineReportAndRerun(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, bd *bundle) {
		ctx := context.Background()
		e := customersEngine(t, bd)
		raw := `b@example.com,"Bob "Bobby" Kay,FR,2020-01-02,2`
		in := "email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,1\n" + raw + "\nc@example.com,Cid,FR,2020-01-02,3\n"
		b, err := e.Import(ctx, batch.ImportParams{Kind: customers.Name, SourceName: "broken.csv", Source: strings.NewReader(in)})
		if err != nil {
			t.Fatal(err)
		}
		if b.Counts[rows.StateValid] != 2 || b.Counts[rows.StateInvalid] != 1 {
			t.Fatalf("counts %v", b.Counts)
		}
		work(t, e, b.ID)
		var report bytes.Buffer
		if n, err := e.ErrorReport(ctx, batch.ErrorReportParams{BatchID: b.ID}, &report); err != nil || n != 1 {
			t.Fatalf("report: %d rows, %v", n, err)
		}
		// The raw text, quoted as a CSV cell, then the row and its error.
		quoted := `"` + strings.ReplaceAll(raw, `"`, `""`) + `"`
		if !strings.Contains(report.String(), "\n"+quoted+",,,,,3,") || !strings.Contains(report.String(), "cannot be read as CSV") {
			t.Fatalf("report:\n%s", report.String())
		}
		fixed := strings.Replace(report.String(), quoted+",,,,", `b@example.com,"Bob ""Bobby"" Kay",FR,2020-01-02,2`, 1)
		res, err := e.Rerun(ctx, batch.RerunParams{BatchID: b.ID, Source: strings.NewReader(fixed), SourceName: "errors.csv", Actor: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reparsed != 1 || res.Valid != 1 {
			t.Fatalf("re-run: %+v", res)
		}
		work(t, e, b.ID)
		if got := storedCustomer(t, bd, "b@example.com"); got != "b@example.com:FR:2:2020-01-02" {
			t.Errorf("stored %q", got)
		}
	})
}
