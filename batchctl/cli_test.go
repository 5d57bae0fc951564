package batchctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/rowfate/rowfate/internal/testdb"
)

// TestHelp: every command explains itself, with its flags and examples,
// on `CMD --help` and `help CMD`, on stdout, with exit 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	root := (&cli{}).rootCommand()
	for _, cmd := range root.Commands() {
		name := cmd.Name()
		for _, args := range [][]string{{name, "--help"}, {"help", name}} {
			r := run(t, args...)
			if r.code != exitOK || r.stderr != "" {
				t.Errorf("%v: %s", args, r)
				continue
			}
			if !strings.Contains(r.stdout, "Usage:\n  batchctl "+name) {
				t.Errorf("%v: no usage line in\n%s", args, r.stdout)
			}
			if name != "help" && name != "completion" && !strings.Contains(r.stdout, "Examples:\n") {
				t.Errorf("%v: no examples in\n%s", args, r.stdout)
			}
			cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(r.stdout, "--"+f.Name) {
					t.Errorf("%v: flag --%s is not documented", args, f.Name)
				}
			})
		}
	}
	r := run(t, "import", "--help")
	for _, flag := range []string{"--dry-run", "--no-work", "--workers", "--encoding", "--delimiter", "--sheet", "--header-row", "--database", "--tenant", "--schema", "--output"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("import --help does not document %s", flag)
		}
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := run(t, "completion", shell)
		if r.code != exitOK || !strings.Contains(r.stdout, "batchctl") || r.stderr != "" {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, r.code, len(r.stdout), r.stderr)
		}
	}
}

func TestParseDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		postgres bool
		path     string
		bad      bool
	}{
		{in: "postgres://u@h/db", postgres: true},
		{in: "postgresql://u@h/db?sslmode=disable", postgres: true},
		{in: "host=db.internal user=app dbname=app", postgres: true},
		{in: "  dbname=app", postgres: true},
		{in: "rowfate.db", path: "rowfate.db"},
		{in: "/var/lib/x/Imports.SQLITE", path: "/var/lib/x/Imports.SQLITE"},
		{in: "data.sqlite3", path: "data.sqlite3"},
		{in: "file:any/name", path: "any/name"},
		{in: "sqlite:old.file", path: "old.file"},
		{in: "customers", bad: true},
		{in: "host db user x", bad: true},
		{in: ".db", bad: true},
		{in: "mysql://h/db", bad: true},
	} {
		got, err := parseDatabase(tc.in)
		if tc.bad != (err != nil) || got.postgres != tc.postgres || got.path != tc.path {
			t.Errorf("parseDatabase(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestHintsCarryTheFlagsInForce: every hint works as printed.
func TestHintsCarryTheFlagsInForce(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("import", "customers", fixture, "--tenant", "acme corp")
	if r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	hint := "list the invalid rows: batchctl rows 1 --state invalid --database " + c.database + " --tenant 'acme corp'\n"
	if !strings.HasSuffix(r.stdout, hint) {
		t.Fatalf("hint is not\n%s\nin %s", hint, r)
	}
	// Following the hint (a shell would unquote it) reads the same batch.
	rs := run(t, "rows", "1", "--state", "invalid", "--database", c.database, "--tenant", "acme corp")
	if rs.code != exitOK || !strings.Contains(rs.stdout, "row 10  invalid") {
		t.Fatalf("following the hint: %s", rs)
	}
	out := filepath.Join(t.TempDir(), "errors.csv")
	r = c.run("errors", "1", "-f", out, "--tenant", "acme corp")
	want := "wrote 15 rows to " + out + "; fix them and run: batchctl import customers " + out + " --database " + c.database + " --tenant 'acme corp'\n"
	if r.code != exitOK || r.stderr != want {
		t.Fatalf("want stderr\n%s\ngot %s", want, r)
	}
}

// TestListsSayWhatIsLeft: a page cut by --limit says how many rows follow
// and how to see them.
func TestListsSayWhatIsLeft(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("import", "customers", fixture)
	r := c.run("rows", "1", "--state", "invalid", "--limit", "10")
	want := "5 more (use --limit/--after): batchctl rows 1 --state invalid --after 200 --limit 10 --database " + c.database + "\n"
	if r.code != exitOK || !strings.HasSuffix(r.stdout, want) || strings.Count(r.stdout, "invalid  ") != 10 {
		t.Fatalf("want 10 rows then\n%s\ngot %s", want, r)
	}
	// The last page says nothing more.
	r = c.run("rows", "1", "--state", "invalid", "--after", "200", "--limit", "10")
	if r.code != exitOK || strings.Contains(r.stdout, "more") || strings.Count(r.stdout, "invalid  ") != 5 {
		t.Fatalf("last page: %s", r)
	}
}

// TestInterruptedImport: Ctrl-C while the file is read writes nothing and
// says so, with exit 130.
func TestInterruptedImport(t *testing.T) {
	t.Parallel()
	c := setup(t)
	c.run("migrate")
	fifo := filepath.Join(t.TempDir(), "slow.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := Run(ctx, builtins, []string{"import", "customers", fifo, "--database", c.database}, strings.NewReader(""), &stdout, &stderr)
		done <- result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(w, "email,name,country,signup_date,amount\n")
	for i := range 2000 {
		fmt.Fprintf(w, "u%d@example.com,User %d,FR,2020-01-02,1\n", i, i)
	}
	time.Sleep(100 * time.Millisecond) // let the import read them
	cancel()
	fmt.Fprint(w, "late@example.com,Late,FR,2020-01-02,1\n")
	w.Close()
	r := <-done
	if r.code != exitInterrupted || r.stderr != "batchctl import: interrupted; nothing was written\n" {
		t.Fatalf("want exit 130 and \"nothing was written\", got %s", r)
	}
	if bs := c.batches(); len(bs) != 0 {
		t.Fatalf("an interrupted import left %d batches", len(bs))
	}
}

// TestReadOnlyCommandsChangeNothing: status, rows, batches and errors
// neither create nor migrate a database.
func TestReadOnlyCommandsChangeNothing(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if err := os.WriteFile(c.database, nil, 0o644); err != nil { // an empty SQLite file
		t.Fatal(err)
	}
	for _, args := range [][]string{{"batches"}, {"status", "1"}, {"rows", "1"}, {"errors", "1"}} {
		r := c.run(args...)
		want := c.database + " has no rowfate tables: import a file first, or run `batchctl migrate --database " + c.database + "`\n"
		if r.code != exitError || !strings.HasSuffix(r.stderr, want) {
			t.Errorf("%v on an empty database: want exit 1 and\n%s\ngot %s", args, want, r)
		}
	}
	if st, err := os.Stat(c.database); err != nil || st.Size() != 0 {
		t.Fatalf("read-only commands wrote to the database (%v, %v)", st.Size(), err)
	}

	// Once migrated and imported, they read it through a read-only file.
	c.run("import", "customers", fixture)
	if err := os.Chmod(c.database, 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(c.database)
	for _, args := range [][]string{{"batches"}, {"status", "1"}, {"rows", "1"}, {"errors", "1"}} {
		if r := c.run(args...); r.code != exitOK && r.code != exitRows {
			t.Errorf("%v on a read-only file: %s", args, r)
		}
	}
	after, _ := os.ReadFile(c.database)
	if !bytes.Equal(before, after) {
		t.Errorf("read-only commands changed the file")
	}
}

// TestDatabaseInAFolderThatIsNot: the error names the path and the reason.
func TestDatabaseInAFolderThatIsNot(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "missing", "rowfate.db")
	r := run(t, "import", "customers", fixture, "--database", db)
	want := "cannot create the database: folder " + filepath.Dir(db) + "/: no such file or directory"
	if r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Fatalf("want exit 1 and %q, got %s", want, r)
	}
}

// TestPostgresConnectionForms: a libpq key=value string works like a URL,
// --schema puts the engine's tables where it says, and hints repeat both.
func TestPostgresConnectionForms(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	schema := testdb.PostgresSchemaName(t)
	pass, _ := u.User.Password()
	kv := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable", u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	if pass != "" {
		kv += " password=" + pass
	}
	// The customers table, the application's, lives on the search_path.
	kv += " search_path=" + schema
	r := run(t, "import", "customers", fixture, "--database", kv, "--pg-schema", schema)
	hint := " --database " + shellQuote(kv) + " --pg-schema " + schema + "\n"
	if r.code != exitRows || !strings.HasSuffix(r.stdout, hint) {
		t.Fatalf("import with a key=value string: want the hint to end with %q, got %s", hint, r)
	}
	pool, err := pgxpool.New(t.Context(), testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM `+schema+`.batch_rows`).Scan(&n); err != nil || n != 300 {
		t.Fatalf("rows in schema %s: %d, %v", schema, n, err)
	}
	if r := run(t, "status", "1", "--database", kv, "--pg-schema", schema); r.code != exitRows {
		t.Fatalf("status: %s", r)
	}
}

// TestDryRunSummarises: past the first errors, a dry run says how many
// more there are and counts them all by column and code.
func TestDryRunSummarises(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("email,name,country,signup_date,amount\n")
	for i := range 30 {
		fmt.Fprintf(&b, "bad%d,Name,FR,2020-01-02,-%d\n", i, i+1) // two errors a row
	}
	path := writeFile(t, "bad.csv", []byte(b.String()))
	r := run(t, "import", "customers", path, "--dry-run")
	for _, want := range []string{
		"  valid 0, invalid 30, total 30\n",
		"  40 more errors (import the file, then `batchctl errors` lists every row)\n",
		"errors by column and code:\n  amount  gte    30\n  email   email  30\n",
	} {
		if r.code != exitRows || !strings.Contains(r.stdout, want) {
			t.Errorf("dry run: want exit 3 and %q in %s", want, r)
		}
	}
	var res struct {
		ErrorTotal  int64 `json:"error_total"`
		ErrorCounts []struct {
			Column string `json:"column"`
			Code   string `json:"code"`
			Count  int64  `json:"count"`
		} `json:"error_counts"`
	}
	r = run(t, "import", "customers", path, "--dry-run", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.ErrorTotal != 60 || len(res.ErrorCounts) != 2 || res.ErrorCounts[0].Count != 30 {
		t.Fatalf("dry run JSON: %+v, %v\n%s", res, err, r)
	}
}

// TestRealFileFlags: --locale, --date-order, --map, --strict and
// --new-batch reach the engine, and the summary says how the file was
// read; the same file again is its first batch.
func TestRealFileFlags(t *testing.T) {
	t.Parallel()
	c := setup(t)
	const real = "../fixtures/real/"
	r := c.run("import", "customers", real+"locale_de.csv", "--locale", "de")
	if r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3\n") || !strings.Contains(r.stdout, "read numbers as 1.234,50\n") {
		t.Errorf("--locale de: %s", r)
	}
	r = c.run("import", "customers", real+"dates_ambiguous.csv", "--date-order", "mdy")
	if r.code != exitOK || !strings.Contains(r.stdout, "read dates month first (month/day/year)\n") {
		t.Errorf("--date-order mdy: %s", r)
	}
	r = c.run("import", "customers", real+"dates_ambiguous.csv")
	if r.code != exitRows || !strings.Contains(r.stdout, "  signup_date  bad_date  2\n") {
		t.Errorf("ambiguous dates without --date-order: %s", r)
	}
	// The engine's messages name options in words and carry them as data;
	// the CLI names them as its flags.
	r = c.run("rows", "3", "--state", "invalid")
	if r.code != exitOK || !strings.Contains(r.stdout, "import with the date order dmy or mdy (--date-order dmy|mdy)") {
		t.Errorf("rows of ambiguous dates: want the flag that settles them: %s", r)
	}
	r = c.run("import", "customers", real+"comma_column.csv", "--dry-run")
	if !strings.Contains(r.stdout, "(--decimal-comma or --locale de|fr)") {
		t.Errorf("dry run of a decimal comma: want the flags that read it: %s", r)
	}
	r = c.run("import", "customers", real+"amount_eur.csv", "--strict")
	if r.code != exitRejected || !strings.Contains(r.stderr, `--map 'Amount (EUR)=amount'`) {
		t.Errorf("--strict: %s", r)
	}
	r = c.run("preview", real+"amount_eur.csv", "--kind", "customers", "--map", "Amount (EUR)=amount")
	if r.code != exitOK || !strings.Contains(r.stdout, `matched  "Amount (EUR)" -> amount`) {
		t.Errorf("preview --map: %s", r)
	}
	// A look-alike column stops the import, naming both flags that settle
	// it (issue 27, item 1); the dry run says the same.
	for _, dry := range [][]string{nil, {"--dry-run"}} {
		r = c.run(append([]string{"import", "customers", real + "amount_eur.csv"}, dry...)...)
		if r.code != exitRejected || !strings.Contains(r.stderr, `--map 'Amount (EUR)=amount' or --ignore 'Amount (EUR)'`) {
			t.Errorf("a look-alike column %v: %s", dry, r)
		}
	}
	r = c.run("import", "customers", real+"amount_eur.csv", "--ignore", "Amount (EUR)")
	if r.code != exitOK {
		t.Fatalf("first import: %s", r)
	}
	id := strings.Fields(r.stdout)[1]
	for _, once := range [][]string{nil, {"--once"}} {
		r = c.run(append([]string{"import", "customers", real + "amount_eur.csv", "--ignore", "Amount (EUR)"}, once...)...)
		if r.code != exitOK || !strings.Contains(r.stderr, "already imported as batch "+id+" with the same options") || !strings.HasPrefix(r.stdout, "batch "+id+" ") {
			t.Errorf("the same file again %v: %s", once, r)
		}
	}
	r = c.run("import", "customers", real+"amount_eur.csv", "--ignore", "Amount (EUR)", "--new-batch")
	if r.code != exitOK || strings.HasPrefix(r.stdout, "batch "+id+" ") || !strings.Contains(r.stdout, "already imported as batch "+id) {
		t.Errorf("--new-batch: %s", r)
	}
	for _, args := range [][]string{
		{"--locale", "xx"}, {"--date-order", "ymd"}, {"--map", "amount"}, {"--locale", "de", "--decimal-comma"},
	} {
		if r := c.run(append([]string{"import", "customers", real + "locale_de.csv"}, args...)...); r.code != exitUsage {
			t.Errorf("%v: %s", args, r)
		}
	}
}
