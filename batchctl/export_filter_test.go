package batchctl

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/batch"
)

// importCustomers imports the lines (email, name, country, signup_date,
// amount) as customers; the import must exit with code.
func importCustomers(t *testing.T, s *session, code int, lines ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	mustRun(t, s, code, "import", "customers", writeFile(t, "customers.csv", []byte(b.String())))
}

// exportRows exports with the flags and returns the file's first
// column after the header (the emails, or a schema row's key), and the
// run.
func exportRows(t *testing.T, s *session, kind string, flags ...string) ([]string, result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.csv")
	r := s.run(append([]string{"export", kind, "-f", out}, flags...)...)
	if r.code != exitOK {
		return nil, r
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("export %v: %v\n%s", flags, err, r)
	}
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(string(data), "\ufeff")), "\n")
	var got []string
	for _, l := range lines[1:] {
		got = append(got, strings.SplitN(strings.TrimSpace(l), ",", 2)[0])
	}
	return got, r
}

// exportCase is an export's flags and the first cells of its rows.
type exportCase struct {
	flags []string
	want  string
}

// checkExports runs each export and checks the rows it wrote.
func checkExports(t *testing.T, s *session, kind string, cases []exportCase) {
	t.Helper()
	for _, tc := range cases {
		got, r := exportRows(t, s, kind, tc.flags...)
		if r.code != exitOK || strings.Join(got, " ") != tc.want {
			t.Errorf("%q: want %q, got %q\n%s", tc.flags, tc.want, got, r)
		}
	}
}

// mustRun runs a command that must exit with code.
func mustRun(t *testing.T, s *session, code int, args ...string) {
	t.Helper()
	if r := s.run(args...); r.code != code {
		t.Fatalf("batchctl %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
}

func TestExportFilterWhere(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		importCustomers(t, s, exitOK,
			"a@x.com,A,DE,2024-01-02,100.00",
			"b@x.com,B,DE,2024-02-03,5",
			"c@x.com,C,FR,2024-03-04,300",
			"d@x.com,D,AT,2023-12-31,50")
		checkExports(t, s, "customers", []exportCase{
			{[]string{"--where", "country=DE and amount>=100"}, "a@x.com"},
			{[]string{"--where", "country in (DE, AT)"}, "a@x.com b@x.com d@x.com"},
			{[]string{"--where", "signup_date < 2024-01-01 or amount > 200"}, "c@x.com d@x.com"},
			{[]string{"--where", "name = 'B'"}, "b@x.com"},
			// Repeated, joined with and.
			{[]string{"--where", "country != FR", "--where", "amount < 60"}, "b@x.com d@x.com"},
			{[]string{"--where", "country = ZZ"}, ""},
		})
		// The export's batch records its filter: status prints it, and
		// its JSON holds it.
		_, r := exportRows(t, s, "customers", "--where", "country=DE and amount>=100")
		if !strings.Contains(r.stdout, "filter: --where 'country=DE and amount>=100'\n") {
			t.Errorf("the export does not print its filter:\n%s", r)
		}
		bs := s.batches()
		id := bs[0].ID
		st := s.run("status", itoa(int(id)))
		if !strings.Contains(st.stdout, "filter: --where 'country=DE and amount>=100'\n") {
			t.Errorf("status does not show the filter:\n%s", st)
		}
		var jb struct {
			Recalc map[string]string `json:"recalc"`
		}
		s.runJSON(exitOK, &jb, "status", itoa(int(id)), "-o", "json")
		if jb.Recalc["where"] != "country=DE and amount>=100" || len(jb.Recalc) != 1 {
			t.Errorf("status -o json: recalc %v", jb.Recalc)
		}
	})
}

func TestExportFilterBatch(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		importCustomers(t, s, exitOK,
			"a@x.com,A,DE,2024-01-02,100",
			"b@x.com,B,DE,2024-02-03,5",
			"c@x.com,C,FR,2024-03-04,300")
		// The second updates c, adds e and f, and has an invalid row.
		importCustomers(t, s, exitRows,
			"c@x.com,C2,FR,2024-03-04,301",
			"e@x.com,E,DE,2024-05-06,7",
			"not-an-email,X,DE,2024-05-06,7",
			"f@x.com,F,IT,2024-05-07,700")
		checkExports(t, s, "customers", []exportCase{
			{[]string{"--batch", "2"}, "c@x.com e@x.com f@x.com"},
			{[]string{"--batch", "1"}, "a@x.com b@x.com c@x.com"},
			{[]string{"--batch", "2", "--state", "succeeded"}, "c@x.com e@x.com f@x.com"},
			// An invalid row wrote nothing: it names no customer.
			{[]string{"--batch", "2", "--state", "invalid"}, ""},
			// Filters combine with and.
			{[]string{"--batch", "2", "--where", "country=DE or amount>500"}, "e@x.com f@x.com"},
			{[]string{"--batch", "1", "--state", "succeeded", "--where", "country=DE"}, "a@x.com b@x.com"},
		})
		_, r := exportRows(t, s, "customers", "--batch", "2", "--where", "country=DE")
		if !strings.Contains(r.stdout, "filter: --batch 2 --state succeeded --where country=DE\n") {
			t.Errorf("the filter is not recorded:\n%s", r)
		}

		n := len(s.batches())
		for _, tc := range []exportCase{
			{[]string{"--state", "succeeded"}, "--state picks rows of a batch: name it with --batch N"},
			{[]string{"--batch", "2", "--state", "nope"}, `--state "nope": unknown state`},
			{[]string{"--batch", "99"}, "--batch: tenant default has no batch 99"},
			// Another tenant's batch is not there for this one.
			{[]string{"--batch", "2", "--tenant", "other"}, "--batch: tenant other has no batch 2"},
		} {
			_, r := exportRows(t, s, "customers", tc.flags...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%q: want exit 2 and %q, got %s", tc.flags, tc.want, r)
			}
		}
		// A batch of another kind.
		schema := writeFile(t, "pay.schema.json", []byte(`{"x-table": "pay", "primaryKey": "ref", "fields": [{"name": "ref"}]}`))
		mustRun(t, s, exitOK, "kind", "add", schema, "--create-table")
		mustRun(t, s, exitOK, "import", "pay", writeFile(t, "pay.csv", []byte("ref\nP-1\n")))
		pay := itoa(int(s.batches()[0].ID))
		if _, r := exportRows(t, s, "customers", "--batch", pay); r.code != exitUsage || !strings.Contains(r.stderr, "batch "+pay+" is a pay batch, not customers") {
			t.Errorf("a pay batch: %s", r)
		}
		if got := len(s.batches()); got != n+1 {
			t.Errorf("a refused export created a batch: %d batches, want %d", got, n+1)
		}
	})
}

func TestExportFilterSchemaKind(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		schema := writeFile(t, "pay.schema.json", []byte(`{"x-table": "pay", "primaryKey": "ref",
			"fields": [{"name": "ref"}, {"name": "currency"}, {"name": "amount", "type": "number"},
				{"name": "paid", "type": "boolean"}, {"name": "day", "type": "date"}, {"name": "qty", "type": "integer"}]}`))
		mustRun(t, s, exitOK, "kind", "add", schema, "--create-table")
		first := writeFile(t, "pay1.csv", []byte("ref,currency,amount,paid,day,qty\n"+
			"P-1,EUR,10.5,true,2024-01-01,1\nP-2,USD,99,false,2024-02-01,2\nP-3,EUR,250,true,2024-03-01,3\n"))
		second := writeFile(t, "pay2.csv", []byte("ref,currency,amount,paid,day,qty\n"+
			"P-3,EUR,251,true,2024-03-01,3\nP-4,EUR,1,false,2024-04-01,4\n"))
		for _, f := range []string{first, second} {
			mustRun(t, s, exitOK, "import", "pay", f)
		}
		checkExports(t, s, "pay", []exportCase{
			{[]string{"--where", "currency=EUR and amount>10"}, "P-1 P-3"},
			{[]string{"--where", "paid = true"}, "P-1 P-3"},
			{[]string{"--where", "day >= 2024-02-15 and qty in (3, 4)"}, "P-3 P-4"},
			{[]string{"--batch", "2"}, "P-3 P-4"},
			{[]string{"--batch", "1", "--where", "currency=EUR"}, "P-1 P-3"},
			{[]string{"--batch", "2", "--state", "failed"}, ""},
		})
		// An unknown column names the schema's.
		if _, r := exportRows(t, s, "pay", "--where", "price > 1"); r.code != exitUsage ||
			!strings.Contains(r.stderr, `unknown column "price"`) || !strings.Contains(r.stderr, "ref, currency, amount, paid, day or qty") {
			t.Errorf("unknown column: %s", r)
		}
		// A schema without a key names no row of a batch.
		keyless := writeFile(t, "log.schema.json", []byte(`{"x-table": "log", "fields": [{"name": "msg"}]}`))
		mustRun(t, s, exitOK, "kind", "add", keyless, "--create-table")
		mustRun(t, s, exitOK, "import", "log", writeFile(t, "log.csv", []byte("msg\nhello\n")))
		log := itoa(int(s.batches()[0].ID))
		if _, r := exportRows(t, s, "log", "--batch", log); r.code != exitUsage || !strings.Contains(r.stderr, "no primary key") {
			t.Errorf("keyless --batch: %s", r)
		}
		if got, r := exportRows(t, s, "log", "--where", "msg = hello"); r.code != exitOK || strings.Join(got, " ") != "hello" {
			t.Errorf("keyless --where: %q %s", got, r)
		}
	})
}

// TestExportFilterRefused: a filter the export cannot apply is a usage
// error before anything is written: no file, nothing on standard output,
// no batch.
func TestExportFilterRefused(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		importCustomers(t, s, exitOK, "a@x.com,A,DE,2024-01-02,100")
		for _, tc := range []struct {
			where string
			want  []string
		}{
			{"country=", []string{`where "country="`, "columns: email, name, country, signup_date or amount"}},
			{"nope = 1", []string{`unknown column "nope"`, "email, name, country, signup_date or amount"}},
			{"amount > lots", []string{"amount", "lots"}},
			{"country = 'DE", []string{"never closed"}},
		} {
			out := filepath.Join(t.TempDir(), "out.csv")
			r := s.run("export", "customers", "-f", out, "--where", tc.where)
			if r.code != exitUsage {
				t.Errorf("--where %q: want exit 2, got %s", tc.where, r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("--where %q: want %q on stderr, got %s", tc.where, w, r)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--where %q: the file was written (%v)", tc.where, err)
			}
			// To standard output: not a byte of a file.
			if r := s.run("export", "customers", "--where", tc.where); r.code != exitUsage || r.stdout != "" {
				t.Errorf("--where %q to stdout: %s", tc.where, r)
			}
		}
		if bs := s.batches(); len(bs) != 1 {
			t.Errorf("refused exports created batches: %d", len(bs))
		}
	})
}

// plainRow is the row of an export kind written in Go with a RowsFunc.
type plainRow struct {
	Name string `col:"name"`
}

// TestExportFilterUnsupported: a Go export kind with a plain RowsFunc
// cannot filter, and says so rather than writing every row.
func TestExportFilterUnsupported(t *testing.T) {
	t.Parallel()
	register := func(ctx context.Context, reg *batch.Registry, db Database) error {
		if err := builtins(ctx, reg, db); err != nil {
			return err
		}
		return batch.RegisterExport(reg, batch.ExportKind[plainRow]{Name: "plain",
			RowsFunc: func(context.Context) iter.Seq2[plainRow, error] {
				return func(yield func(plainRow, error) bool) { yield(plainRow{Name: "one"}, nil) }
			}})
	}
	bothStores(t, func(t *testing.T, s *session) {
		run := func(args ...string) result {
			var stdout, stderr bytes.Buffer
			code := Run(t.Context(), register, append(args, "--database", s.database), strings.NewReader(""), &stdout, &stderr)
			return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
		}
		for _, tc := range []struct {
			flags []string
			want  string
		}{
			{[]string{"--where", "name=one"}, "export kind plain does not take --where"},
			{[]string{"--batch", "1"}, "export kind plain does not take --batch"},
		} {
			out := filepath.Join(t.TempDir(), "out.csv")
			r := run(append([]string{"export", "plain", "-f", out}, tc.flags...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%q: want exit 2 and %q, got %s", tc.flags, tc.want, r)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%q: the file was written (%v)", tc.flags, err)
			}
		}
		// Unfiltered, it exports as before.
		out := filepath.Join(t.TempDir(), "out.csv")
		if r := run("export", "plain", "-f", out); r.code != exitOK {
			t.Fatalf("export plain: %s", r)
		}
		if r := run("batches"); r.code != exitOK || strings.Count(r.stdout, "(plain,") != 1 {
			t.Errorf("want the one unfiltered export's batch: %s", r)
		}
	})
}
