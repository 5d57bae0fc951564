package batchctl

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRerunWithLocale: rerun --locale fixes a batch imported without its
// locale: every row succeeds, and the history says which conventions the
// batch had and has (issue 27, item 6).
func TestRerunWithLocale(t *testing.T) {
	t.Parallel()
	c := setup(t)
	file := "../fixtures/real/locale_de.csv"
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if r := c.run("import", "customers", file); r.code != exitRows || !strings.Contains(squash(r.stdout), "invalid 3 total 3") {
		t.Fatalf("import without the locale: %s", r)
	}
	r := c.run("rerun", "1", "--locale", "de", "--actor", "ann")
	if r.code != exitOK || !strings.Contains(r.stderr, "3 valid, 0 invalid") || !strings.Contains(squash(r.stdout), "succeeded 3 total 3") {
		t.Fatalf("rerun --locale de: %s", r)
	}
	if r := c.run("status", "1"); !strings.Contains(r.stdout, "numbers as") {
		t.Errorf("status does not show the new number format: %s", r)
	}
	r = c.run("history", "1")
	if r.code != exitOK || !strings.Contains(r.stdout, " rerun ") || !strings.Contains(r.stdout, "; conventions were ") || !strings.Contains(r.stdout, `now "read numbers as`) {
		t.Errorf("history lacks the old and new conventions: %s", r)
	}
}

// TestLookAlikeColumnFlags: a look-alike column stops the import (exit 4)
// naming --map and --ignore; preview says so with exit 4; --ignore
// imports the file without it (issue 27, item 1).
func TestLookAlikeColumnFlags(t *testing.T) {
	t.Parallel()
	c := setup(t)
	file := "../fixtures/real/amount_eur.csv"
	flags := `--map 'Amount (EUR)=amount' or --ignore 'Amount (EUR)'`
	if r := c.run("import", "customers", file); r.code != exitRejected || !strings.Contains(r.stderr, flags) || !strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("import: %s", r)
	}
	if r := c.run("preview", file, "--kind", "customers"); r.code != exitRejected || !strings.Contains(r.stdout, "the file would be rejected") || !strings.Contains(r.stdout, flags) {
		t.Errorf("preview: %s", r)
	}
	if r := c.run("preview", file, "--kind", "customers", "--ignore", "Amount (EUR)"); r.code != exitOK {
		t.Errorf("preview --ignore: %s", r)
	}
	if r := c.run("import", "customers", file, "--ignore", "Amount (EUR)"); r.code != exitOK {
		t.Errorf("import --ignore: %s", r)
	}
	if r := c.run("import", "customers", file, "--ignore", " "); r.code != exitUsage {
		t.Errorf("--ignore without a column: %s", r)
	}
}

// TestReimportOfExportWarning: a file batchctl export wrote, imported
// again as a new batch, is said to have been exported by its batch, not
// imported (issue 27).
func TestReimportOfExportWarning(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		out := filepath.Join(t.TempDir(), "out.csv")
		if r := s.run("import", "customers", "../fixtures/customers.csv"); r.code != exitRows {
			t.Fatalf("import: %s", r)
		}
		if r := s.run("export", "customers", "-f", out); r.code != exitOK {
			t.Fatalf("export: %s", r)
		}
		// The warning is part of the outcome, on stdout.
		r := s.run("import", "customers", out, "--new-batch")
		if r.code != exitOK || !strings.Contains(r.stdout, "warning: this file was exported as batch 2 on ") || strings.Contains(r.stdout, "imported as batch 2") {
			t.Errorf("the import of the export's file: %s", r)
		}
		r = s.run("import", "customers", out, "--new-batch")
		if !strings.Contains(r.stdout, "warning: this file was already imported as batch 3 on ") {
			t.Errorf("the file imported again: %s", r)
		}
	})
}
