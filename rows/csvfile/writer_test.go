package csvfile

import (
	"bytes"
	"errors"
	"iter"
	"testing"

	"github.com/rowfate/rowfate/rows"
)

func TestCellWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := NewCellWriter(&buf, []string{"name", "=total", "phone"}, rows.WriteOptions{Comma: ';'})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]rows.Cell{
		{{Text: "=Ann"}, {Type: rows.CellNumber, Text: "-5"}, {Text: "+44 20", Raw: true}},
		{{Text: "a;b"}, {Type: rows.CellNumber, Text: "1"}, {Text: "@x"}},
	} {
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "\ufeffname;'=total;phone\r\n'=Ann;-5;+44 20\r\n\"a;b\";1;'@x\r\n"
	if got := buf.String(); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}

	buf.Reset()
	w, err = NewCellWriter(&buf, []string{"a"}, rows.WriteOptions{NoBOM: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if got := buf.String(); got != "" { // the header is buffered; Abort drops it
		t.Errorf("NoBOM, aborted: %q", got)
	}
	if _, err := NewCellWriter(&buf, []string{"a"}, rows.WriteOptions{Comma: '"'}); err == nil {
		t.Error("a quote as the delimiter was accepted")
	}
}

func TestWriteErrorReport(t *testing.T) {
	t.Parallel()
	report := []rows.ReportRow{
		{Row: 3, Values: []string{"not-an-email", "=Ann"}, Errors: []rows.FieldError{
			{Row: 3, Column: "email", Code: "email", Message: "must be a valid email"},
			{Row: 3, Code: "duplicate_key", Message: "repeats row 2"},
		}},
		{Row: 12, Values: []string{"b@x.io", "Bob"}, Errors: []rows.FieldError{{Row: 12, Message: "failed"}}},
	}
	src := func(yield func(rows.ReportRow, error) bool) {
		for _, r := range report {
			if !yield(r, nil) {
				return
			}
		}
	}
	var buf bytes.Buffer
	title := rows.ReportTitle(7, "customers")
	n, err := WriteErrorReport(&buf, title, []string{"email", "name"}, src)
	if err != nil || n != 2 {
		t.Fatalf("wrote %d rows: %v", n, err)
	}
	want := "\ufeff" + title + "\r\nemail,name,row,error\r\n" +
		"not-an-email,'=Ann,3,email: must be a valid email; repeats row 2\r\n" +
		"b@x.io,Bob,12,failed\r\n"
	if got := buf.String(); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	// Read back, the title is a title row above the header, naming the
	// batch.
	r, err := NewReader(bytes.NewReader(buf.Bytes()), "errors.csv", &Options{HeaderFunc: func(c []string) bool { return len(c) > 1 && c[0] == "email" }})
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Info(); len(info.Titles) != 1 || info.HeaderRow != 2 {
		t.Fatalf("read back: %+v", info)
	} else if id, ok := rows.ParseReportTitle(info.Titles[0]); !ok || id != 7 {
		t.Fatalf("title %q names batch %d, %v", info.Titles[0], id, ok)
	}
	if rec, err := r.Next(); err != nil || rec.Values[1] != "=Ann" {
		t.Fatalf("first row read back: %+v, %v", rec, err)
	}
	if report[0].Values[1] != "=Ann" || len(report[0].Values) != 2 {
		t.Errorf("the source's row was changed: %q", report[0].Values)
	}

	broken := iter.Seq2[rows.ReportRow, error](func(yield func(rows.ReportRow, error) bool) { yield(rows.ReportRow{}, errors.New("db gone")) })
	if _, err := WriteErrorReport(&bytes.Buffer{}, "", []string{"a"}, broken); err == nil || err.Error() != "db gone" {
		t.Errorf("broken source: %v", err)
	}
}

func TestWriteTemplate(t *testing.T) {
	t.Parallel()
	cols := []rows.TemplateColumn{
		{Name: "email", Example: "ann@example.com", Required: true},
		{Name: "amount", Example: "-1.50", Note: "A number."},
		{Name: "note"},
	}
	var buf bytes.Buffer
	if err := WriteTemplate(&buf, cols, "ignored"); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "\ufeffemail,amount,note\r\nann@example.com,'-1.50,,"+rows.ExampleMarker+"\r\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	buf.Reset()
	if err := WriteTemplate(&buf, []rows.TemplateColumn{{Name: "email"}, {Name: "name"}}, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "\ufeffemail,name\r\n"; got != want {
		t.Errorf("without examples: wrote %q, want %q", got, want)
	}
}
