package batchctl

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/internal/testenv"
)

// wideLimit is the peak RSS an import, and the work of its rows, may
// reach for a file whose rows carry megabytes the kind does not read.
const wideLimit = 64 << 20

// TestWideIgnoredColumns: a file of a few hundred rows, each carrying a
// megabyte in columns the kind does not read, is imported and worked in
// bounded memory (a 288 MB file of 300 rows took 614 MB to import and
// 603 MB to work: every cell was stored, and a claim read a chunk of
// them back). The ignored cells are not kept, and the batch says so.
func TestWideIgnoredColumns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a file of a hundred megabytes")
	}
	bin := buildBatchctl(t)
	dir := t.TempDir()
	n := testenv.Pick(100, 300)
	path := filepath.Join(dir, "wide.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	// Sixteen columns of 60 KB each: every cell under the reader's cap
	// of 64 KiB, a megabyte a row.
	var head, wide strings.Builder
	for j := range 16 {
		fmt.Fprintf(&head, ",notes%d", j)
		wide.WriteString("," + strings.Repeat("x", 60_000))
	}
	fmt.Fprintln(w, "email,name,country,signup_date,amount"+head.String())
	for i := range n {
		fmt.Fprintf(w, "w%d@example.com,Wide %d,FR,2021-03-04,%d.50%s\n", i, i, i, wide.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "w.db")
	for _, step := range [][]string{
		{"import", "customers", path, "--database", db, "--no-work"},
		{"worker", "--until-done", "--worker-token", "dev", "--database", db},
	} {
		cmd, peak := peakRSSCommand(t, bin, step...)
		cmd.Env = append(cmd.Env, "DATABASE_URL=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", step[0], err, firstLine(string(out)))
		}
		if rss := peak(); rss > wideLimit {
			t.Errorf("%s of %d rows with a megabyte of ignored columns: peak RSS %d MiB, over %d MiB", step[0], n, rss>>20, wideLimit>>20)
		} else {
			t.Logf("%s: peak RSS %d MiB", step[0], rss>>20)
		}
	}
	r := run(t, "status", "1", "--database", db)
	if r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("succeeded  %d", n)) || !strings.Contains(r.stdout, `"notes0"`) {
		t.Fatalf("status: %s", r)
	}
}
