package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// emailRE approximates the validator package's email rule: something, an
// @, and a domain with a dot. It accepts every address bench/gencustomers
// writes and rejects its "not-an-email".
var emailRE = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s.]+$`)

// validRow reports whether rec (email, name, country, signup_date, amount)
// passes the customers kind's validation (processors/customers), as far as
// a short approximation goes (see rowProblem).
func validRow(rec []string) bool { return rowProblem(rec) == "" }

// rowProblem returns the first column of rec (email, name, country,
// signup_date, amount) that fails the customers kind's validation, or ""
// when the row passes, as far as a short approximation goes:
//
//   - email: required, an address (emailRE), at most 254 characters;
//   - name: required, at most 200 characters, no < or >;
//   - country: optional; if given, two letters (the kind checks the ISO
//     3166 list; bench/gencustomers only writes real codes);
//   - signup_date: required, YYYY-MM-DD or RFC 3339, not before 2000-01-01;
//   - amount: optional; if given, a decimal of at most 2 places, not
//     negative, and a country is required when it is above 0.
//
// It trims the cells of rec in place. A row with other than 5 cells is a
// problem of the whole row ("row").
func rowProblem(rec []string) string {
	if len(rec) != 5 {
		return "row"
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	email, name, country, date, amount := rec[0], rec[1], rec[2], rec[3], rec[4]
	if email == "" || len(email) > 254 || !emailRE.MatchString(email) {
		return "email"
	}
	if name == "" || len([]rune(name)) > 200 || strings.ContainsAny(name, "<>") {
		return "name"
	}
	if country != "" && (len(country) != 2 || !isLetters(country)) {
		return "country"
	}
	d, err := time.Parse("2006-01-02", date)
	if err != nil {
		if d, err = time.Parse(time.RFC3339, date); err != nil {
			return "signup_date"
		}
	}
	if d.Before(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		return "signup_date"
	}
	if amount != "" {
		a, err := strconv.ParseFloat(amount, 64)
		if err != nil || a < 0 {
			return "amount"
		}
		if i := strings.IndexByte(amount, '.'); i >= 0 && len(strings.TrimRight(amount[i+1:], "0")) > 2 {
			return "amount"
		}
		if a > 0 && country == "" {
			return "country"
		}
	}
	return ""
}

func isLetters(s string) bool {
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') {
			return false
		}
	}
	return true
}

// filterValid copies the header and the rows of src that validRow accepts
// to dst, keeping the first row of each email (rowfate keys customers by
// lower-cased email), and returns how many data rows it kept.
func filterValid(src, dst string) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	r := csv.NewReader(bufio.NewReaderSize(in, 1<<16))
	r.FieldsPerRecord = -1
	bw := bufio.NewWriterSize(out, 1<<16)
	w := csv.NewWriter(bw)
	header, err := r.Read()
	if err != nil {
		out.Close()
		return 0, err
	}
	if strings.Join(header, ",") != "email,name,country,signup_date,amount" {
		out.Close()
		return 0, fmt.Errorf("unexpected header %q", header)
	}
	w.Write(header)
	seen := map[string]bool{}
	kept := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.Close()
			return 0, err
		}
		if !validRow(rec) {
			continue
		}
		key := strings.ToLower(rec[0])
		if seen[key] {
			continue
		}
		seen[key] = true
		w.Write(rec)
		kept++
	}
	w.Flush()
	if err := w.Error(); err != nil {
		out.Close()
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return 0, err
	}
	return kept, out.Close()
}

// headCSV copies the header line and the first n data lines of src to dst.
// The generated files have no quoted line breaks, so lines are rows.
func headCSV(src, dst string, n int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(in, 1<<16)
	bw := bufio.NewWriterSize(out, 1<<16)
	for i := 0; i <= n; i++ {
		line, err := br.ReadBytes('\n')
		bw.Write(line)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			out.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// csvToXLSX writes the rows of the CSV file src to the XLSX file dst with
// excelize's StreamWriter, every cell as the same text (inline strings).
func csvToXLSX(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f := excelize.NewFile()
	defer f.Close()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return err
	}
	r := csv.NewReader(bufio.NewReaderSize(in, 1<<16))
	r.FieldsPerRecord = -1
	cells := make([]any, 5)
	for row := 1; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		cells = cells[:len(rec)]
		for i, v := range rec {
			cells[i] = v
		}
		cell, err := excelize.CoordinatesToCellName(1, row)
		if err != nil {
			return err
		}
		if err := sw.SetRow(cell, cells); err != nil {
			return err
		}
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	return f.SaveAs(dst)
}
