// Command gencustomers writes a customers CSV of any size to stdout, for
// benchmarks: go run ./bench/gencustomers -n 100000 > /tmp/customers-100k.csv
//
// The data is deterministic for a given -n and -seed; about 1 row in 50 is
// invalid in one of the ways the fixture shows (bad email, missing name, bad
// date, negative amount).
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	n := flag.Int("n", 100000, "data rows")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := write(*n, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gencustomers:", err)
		os.Exit(1)
	}
}

func write(n int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	first := []string{"Ada", "Alan", "Grace", "Linus", "Barbara", "Ken", "Dennis", "Margaret", "Edsger", "Frances"}
	last := []string{"Lovelace", "Turing", "Hopper", "Torvalds", "Liskov", "Thompson", "Ritchie", "Hamilton", "Dijkstra", "Allen"}
	countries := []string{"GB", "US", "DE", "FR", "NL", "IT", "ES", "SE", "JP", "CA"}
	bw := bufio.NewWriterSize(os.Stdout, 1<<16)
	w := csv.NewWriter(bw)
	if err := w.Write([]string{"email", "name", "country", "signup_date", "amount"}); err != nil {
		return err
	}
	for i := range n {
		f, l := first[r.IntN(len(first))], last[r.IntN(len(last))]
		rec := []string{
			fmt.Sprintf("%s.%s.%d@example.com", f, l, i),
			f + " " + l,
			countries[r.IntN(len(countries))],
			fmt.Sprintf("20%02d-%02d-%02d", 10+r.IntN(15), 1+r.IntN(12), 1+r.IntN(28)),
			strconv.FormatFloat(float64(r.IntN(100000))/100, 'f', 2, 64),
		}
		switch r.IntN(200) {
		case 0:
			rec[0] = "not-an-email"
		case 1:
			rec[1] = ""
		case 2:
			rec[3] = "2023-13-01"
		case 3:
			rec[4] = "-1.00"
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return bw.Flush()
}
