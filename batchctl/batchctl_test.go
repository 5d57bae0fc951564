package batchctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/internal/testdb"
)

// fixture is fixtures/customers.csv seen from the package folder, the
// working directory of `go test`.
const fixture = "../fixtures/customers.csv"

// fixtureInvalid are the rows of the fixture that fail validation. Row
// numbers are physical lines, so the header is row 1 and the data rows are
// 2..301.
// Row 300 repeats row 2's email, the customers kind's natural key.
var fixtureInvalid = []int64{10, 20, 30, 40, 50, 90, 120, 140, 160, 200, 250, 270, 280, 290, 300}

// The JSON shapes scripts rely on, declared here rather than borrowed from
// package batch so that renaming a json tag there breaks these tests.
type jsonBatch struct {
	ID         int64            `json:"id"`
	TenantID   string           `json:"tenant_id"`
	Kind       string           `json:"kind"`
	SourceName string           `json:"source_name"`
	Status     string           `json:"status"`
	Header     []string         `json:"header"`
	Counts     map[string]int64 `json:"counts"`
}

type jsonRow struct {
	BatchID  int64            `json:"batch_id"`
	RowNo    int64            `json:"row_no"`
	State    string           `json:"state"`
	Values   []string         `json:"values"`
	Errors   []jsonFieldError `json:"errors"`
	ResultID string           `json:"result_id"`
}

type jsonFieldError struct {
	Row    int64  `json:"row"`
	Column string `json:"column"`
	Field  string `json:"field"`
	Code   string `json:"code"`
}

type jsonKind struct {
	Name      string `json:"name"`
	Direction string `json:"direction"`
	Columns   []struct {
		Name  string `json:"name"`
		Field string `json:"field"`
	} `json:"columns"`
	Required []string `json:"required"`
}

// result is what one Run call did.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run calls Run with args exactly as given.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), builtins, args, strings.NewReader(""), &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// session runs batchctl against one database.
type session struct {
	t        *testing.T
	database string
}

// setup returns a cli on a fresh SQLite file. The file does not exist until
// a command opens it.
func setup(t *testing.T) *session {
	t.Helper()
	return &session{t: t, database: testdb.SQLitePath(t)}
}

// run calls Run with args followed by --database, then runs the commands
// its output suggests on a copy of the database (checkHints).
func (c *session) run(args ...string) result {
	c.t.Helper()
	r := run(c.t, append(args, "--database", c.database)...)
	checkHints(c.t, c.database, r)
	return r
}

// runJSON runs a command that must exit with code and decodes its stdout.
func (c *session) runJSON(code int, v any, args ...string) {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("batchctl %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		c.t.Fatalf("batchctl %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, r)
	}
}

// batches returns the batches of the default tenant.
func (c *session) batches() []jsonBatch {
	c.t.Helper()
	var bs []jsonBatch
	c.runJSON(exitOK, &bs, "batches", "-o", "json")
	return bs
}

// writeFile writes a file under a fresh temporary folder and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImportFixtureSQLite(t *testing.T) {
	t.Parallel()
	c := setup(t)
	testFixtureFlow(t, c, " --database "+c.database)
}

func TestImportFixturePostgres(t *testing.T) {
	t.Parallel()
	c, cfg := pgSessionConfig(t) // fails under ROWFATE_REQUIRE_POSTGRES=1 without DATABASE_URL
	schema := cfg.ConnConfig.RuntimeParams["search_path"]

	// The hint repeats the --database in force, so that it works as
	// printed (a hint without it would read ./rowfate.db).
	testFixtureFlow(t, c, " --database "+shellQuote(c.database))

	// Everything landed in the test's schema, not in public.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for table, want := range map[string]int64{"batches": 1, "batch_rows": 300, "customers": 285} {
		var n int64
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM "+schema+"."+table).Scan(&n); err != nil {
			t.Fatalf("count %s.%s: %v", schema, table, err)
		}
		if n != want {
			t.Errorf("%s.%s has %d rows, want %d", schema, table, n, want)
		}
	}
}

// testFixtureFlow imports fixtures/customers.csv into an empty database and
// reads its outcome back with status and rows. hint is what the import's
// follow-up command line carries after the state.
func testFixtureFlow(t *testing.T, c *session, hint string) {
	t.Run("import", func(t *testing.T) {
		r := c.run("import", "customers", fixture)
		want := "batch 1  finished  " + fixture + "  (customers, tenant default)\n" +
			"      invalid   15\n" +
			"    succeeded  285\n" +
			"        total  300\n" +
			"warning: column \"amount\" has 1 values written with a decimal comma: they are invalid; import with a decimal comma (or a locale that writes one) to read them (--decimal-comma or --locale de|fr)\n" +
			"errors by column and code:\n" +
			"  email        email                 4\n" +
			"  amount       gte                   3\n" +
			"  name         required              2\n" +
			"  signup_date  bad_date              2\n" +
			"  amount       not_a_number          1\n" +
			"  country      iso3166_1_alpha2      1\n" +
			"  email        duplicate_key         1\n" +
			"  name         forbidden_characters  1\n" +
			"  signup_date  too_early             1\n" +
			"list the invalid rows: batchctl rows 1 --state invalid" + hint + "\n"
		if r.code != exitRows || r.stdout != want || r.withoutProgress() != created(1, fixture) {
			t.Fatalf("want exit %d and stdout\n%s\ngot %s", exitRows, want, r)
		}
	})

	t.Run("status", func(t *testing.T) {
		var b jsonBatch
		c.runJSON(exitRows, &b, "status", "1", "-o", "json")
		want := jsonBatch{
			ID: 1, TenantID: "default", Kind: "customers", SourceName: fixture, Status: "finished",
			Header: []string{"email", "name", "country", "signup_date", "amount"},
			Counts: map[string]int64{"invalid": 15, "succeeded": 285},
		}
		if fmt.Sprint(b) != fmt.Sprint(want) {
			t.Errorf("status 1:\n got %+v\nwant %+v", b, want)
		}

		r := c.run("status", "1")
		if r.code != exitRows || !strings.Contains(r.stdout, "    succeeded  285\n") {
			t.Errorf("status 1 as text: %s", r)
		}
	})

	t.Run("status of another tenant", func(t *testing.T) {
		r := c.run("status", "1", "--tenant", "other")
		if r.code != exitError || r.stderr != "batchctl status: get batch 1: not found\n" {
			t.Errorf("want exit %d and not found, got %s", exitError, r)
		}
	})

	t.Run("invalid rows", func(t *testing.T) {
		var rs []jsonRow
		c.runJSON(exitOK, &rs, "rows", "1", "--state", "invalid", "-o", "json")
		var got []int64
		byNo := map[int64]jsonRow{}
		for _, r := range rs {
			got = append(got, r.RowNo)
			byNo[r.RowNo] = r
			if r.BatchID != 1 || r.State != "invalid" || r.ResultID != "" || len(r.Errors) == 0 || len(r.Values) != 5 {
				t.Errorf("row %d: %+v", r.RowNo, r)
			}
			for _, e := range r.Errors {
				if e.Row != r.RowNo {
					t.Errorf("row %d has an error of row %d", r.RowNo, e.Row)
				}
			}
		}
		if !slices.Equal(got, fixtureInvalid) {
			t.Fatalf("invalid rows %v, want %v", got, fixtureInvalid)
		}

		// column/field/code of every error of a row, in order.
		errs := func(no int64) string {
			var parts []string
			for _, e := range byNo[no].Errors {
				parts = append(parts, e.Column+"/"+e.Field+"/"+e.Code)
			}
			return strings.Join(parts, " ")
		}
		for no, want := range map[int64]string{
			10:  "email/Email/email",
			20:  "name/Name/required",
			30:  "signup_date/SignupDate/bad_date",
			40:  "amount/Amount/gte",
			90:  "name/Name/required", // only blanks
			140: "signup_date/SignupDate/bad_date",
			160: "amount/Amount/not_a_number",
			250: "email/Email/email amount/Amount/gte",
			270: "country/Country/iso3166_1_alpha2",
			280: "signup_date/SignupDate/too_early",
			290: "name/Name/forbidden_characters",
			300: "email/Email/duplicate_key",
		} {
			if got := errs(no); got != want {
				t.Errorf("row %d errors %q, want %q", no, got, want)
			}
		}
	})

	t.Run("invalid rows as text", func(t *testing.T) {
		r := c.run("rows", "1", "--state", "invalid", "--after", "249", "--limit", "1")
		want := "row 250  invalid  email: must be a valid email; amount: must be ≥ 0\n" +
			`    email="carol(at)example.com" name="Alan Hopper" country="US" signup_date="2011-10-25" amount="-1"` + "\n" +
			"more rows follow (use --limit/--after): batchctl rows 1 --state invalid --after 250 --limit 1" + hint + "\n"
		if r.code != exitOK || r.stdout != want {
			t.Errorf("want stdout\n%s\ngot %s", want, r)
		}
	})

	t.Run("succeeded rows", func(t *testing.T) {
		var rs []jsonRow
		c.runJSON(exitOK, &rs, "rows", "1", "--state", "succeeded", "--limit", "0", "-o", "json")
		if len(rs) != 285 {
			t.Fatalf("%d succeeded rows, want 285", len(rs))
		}
		ids := map[int64]string{}
		distinct := map[string]bool{}
		for _, r := range rs {
			if r.State != "succeeded" || r.ResultID == "" || len(r.Errors) != 0 {
				t.Errorf("row %d: %+v", r.RowNo, r)
			}
			ids[r.RowNo] = r.ResultID
			distinct[r.ResultID] = true
		}
		// Row 300 repeats row 2's email: it is invalid (duplicate_key),
		// never upserted over row 2.
		if ids[2] == "" || ids[300] != "" {
			t.Errorf("row 2 result id %q, row 300 %q: want row 2 only", ids[2], ids[300])
		}
		if len(distinct) != 285 {
			t.Errorf("%d distinct result ids, want 285", len(distinct))
		}
	})

	t.Run("paging", func(t *testing.T) {
		var rs []jsonRow
		c.runJSON(exitOK, &rs, "rows", "1", "--after", "9", "--limit", "3", "-o", "json")
		var got []string
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%d:%s", r.RowNo, r.State))
		}
		if want := []string{"10:invalid", "11:succeeded", "12:succeeded"}; !slices.Equal(got, want) {
			t.Errorf("rows after 9: %v, want %v", got, want)
		}

		c.runJSON(exitOK, &rs, "rows", "1", "--limit", "0", "-o", "json")
		if len(rs) != 300 || rs[0].RowNo != 2 || rs[299].RowNo != 301 {
			t.Errorf("all rows: %d rows", len(rs))
		}
	})

	t.Run("flags anywhere after the command", func(t *testing.T) {
		var want []jsonRow
		c.runJSON(exitOK, &want, "rows", "1", "--state", "invalid", "-o", "json")
		for _, args := range [][]string{
			{"rows", "--state", "invalid", "-o", "json", "1"},
			{"rows", "-o", "json", "1", "--state", "invalid"},
			{"rows", "--state=invalid", "1", "-o=json"},
		} {
			var got []jsonRow
			c.runJSON(exitOK, &got, args...)
			if len(got) != len(fixtureInvalid) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v: %d rows, want the %d invalid rows", args, len(got), len(fixtureInvalid))
			}
		}
	})

	t.Run("batches", func(t *testing.T) {
		bs := c.batches()
		if len(bs) != 1 || bs[0].ID != 1 || bs[0].Status != "finished" || bs[0].Counts["succeeded"] != 285 {
			t.Errorf("batches: %+v", bs)
		}
	})
}

func TestImportAllValid(t *testing.T) {
	t.Parallel()
	c := setup(t)
	path := writeFile(t, "ok.csv", []byte("email,name,country,signup_date,amount\n"+
		"a@example.com,Ann,FR,2020-01-02,10\n"+
		"b@example.com,Bob,,13/01/2021,0\n"+
		"\n"+
		"c@example.com,Cid,DE,2021-03-04T05:06:07Z,1.5\n"))
	r := c.run("import", "customers", path)
	want := "batch 1  finished  " + path + "  (customers, tenant default)\n" +
		"             succeeded  3\n" +
		"                 total  3\n" +
		"    empty rows skipped  1\n" +
		"read dates day first (day/month/year), as row 3 reads no other way\n"
	if r.code != exitOK || r.stdout != want || r.withoutProgress() != created(1, path) {
		t.Fatalf("want exit 0 and stdout\n%s\ngot %s", want, r)
	}
	var b jsonBatch
	c.runJSON(exitOK, &b, "status", "1", "-o", "json")
	if b.Status != "finished" || fmt.Sprint(b.Counts) != "map[succeeded:3]" {
		t.Errorf("status 1: %+v", b)
	}
}

func TestImportHeaderOnly(t *testing.T) {
	t.Parallel()
	c := setup(t)
	// A header and no rows is not rejected: it is an empty batch, finished
	// at once, and every one of its (zero) rows succeeded.
	path := writeFile(t, "header.csv", []byte("email,name,country,signup_date,amount\n"))
	r := c.run("import", "customers", path)
	want := "batch 1  finished  " + path + "  (customers, tenant default)\n" +
		"    total  0\n"
	if r.code != exitOK || r.stdout != want || r.withoutProgress() != created(1, path) {
		t.Fatalf("want exit 0 and stdout\n%s\ngot %s", want, r)
	}
	bs := c.batches()
	if len(bs) != 1 || bs[0].Status != "finished" || len(bs[0].Counts) != 0 {
		t.Errorf("batches: %+v", bs)
	}
}

func TestImportRejected(t *testing.T) {
	t.Parallel()
	const header = "email,name,country,signup_date,amount\n"
	// rows3 is three good data rows; the over-long case puts a line over
	// MaxLineBytes after them, so rows are already streaming into the
	// store when the file is rejected.
	const rows3 = "a@example.com,Ann,FR,2020-01-02,10\nb@example.com,Bob,FR,2020-01-02,10\nc@example.com,Cid,FR,2020-01-02,10\n"
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")

	for _, tc := range []struct {
		name   string
		path   func(t *testing.T) string
		reason string // what stderr says after the file name
	}{
		{"empty file", func(t *testing.T) string {
			return writeFile(t, "empty.csv", nil)
		}, ": no header row: the file is empty\n"},
		{"only blank lines", func(t *testing.T) string {
			return writeFile(t, "blank.csv", []byte("\n\n\r\n"))
		}, ": no header row: the file is empty\n"},
		{"png", func(t *testing.T) string {
			return writeFile(t, "image.csv", png)
		}, ": line 1: the header row is not UTF-8 text: is this a CSV file?\n"},
		{"binary with a bare quote", func(t *testing.T) string {
			return writeFile(t, "random.csv", []byte("\x00\x01\xfe\"\xff,\x02\n\x03\"x\n"))
		}, ": line 1: the header row is not UTF-8 text: is this a CSV file?\n"},
		{"line over the limit after good rows", func(t *testing.T) string {
			return writeFile(t, "long.csv", []byte(header+rows3+strings.Repeat("x", 4<<20+1)+"\n"+rows3))
		}, ": line 5: line is longer than the limit of 4194304 bytes\n"},
		{"missing required column", func(t *testing.T) string {
			return writeFile(t, "noemail.csv", []byte("name,country,signup_date,amount\nAnn,FR,2020-01-02,10\n"))
		}, `: line 1: bad header: missing required columns: "email"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setup(t)
			c.run("migrate") // so that "no batch" can be read back below
			path := tc.path(t)
			r := c.run("import", "customers", path)
			want := "batchctl import: " + path + tc.reason + "the file was rejected; nothing was written\n"
			if r.code != exitRejected || r.stdout != "" || r.stderr != want {
				t.Fatalf("want exit %d and stderr\n%s\ngot %s", exitRejected, want, r)
			}
			if bs := c.batches(); len(bs) != 0 {
				t.Errorf("a rejected file left batches behind: %+v", bs)
			}
		})
	}
}

// TestImportNoSuchFile: a path that cannot be opened is a usage error
// (exit 2), not a rejected file (exit 4), which a script would read as the
// client's bad file.
func TestImportNoSuchFile(t *testing.T) {
	t.Parallel()
	c := setup(t)
	missing := filepath.Join(t.TempDir(), "nope.csv")
	if r := c.run("import", "customers", missing); r.code != exitUsage || !strings.Contains(r.stderr, missing+": no such file or directory") {
		t.Errorf("a missing file: %s", r)
	}
	dir := t.TempDir()
	if r := c.run("import", "customers", dir); r.code != exitUsage || !strings.Contains(r.stderr, dir+" is a directory, not a file") {
		t.Errorf("a directory: %s", r)
	}
}

func TestImportUnknownKind(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("import", "suppliers", fixture)
	want := "batchctl import: unknown kind \"suppliers\"; known kinds: customers\nrun `batchctl import --help` for usage\n"
	if r.code != exitUsage || r.stdout != "" || r.stderr != want {
		t.Fatalf("want exit %d and stderr\n%s\ngot %s", exitUsage, want, r)
	}
	// The kind is checked before anything is opened: no database at all.
	if _, err := os.Stat(c.database); !os.IsNotExist(err) {
		t.Errorf("an unknown kind created the database (stat: %v)", err)
	}
}

// rootUsage is the usage text of batchctl without a command.
func rootUsage() string {
	return usage((&cli{}).rootCommand())
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	hint := func(cmd string) string { return "run `batchctl " + cmd + " --help` for usage\n" }
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string // the whole of stderr
	}{
		{"unknown command", []string{"frob"}, "batchctl: unknown command \"frob\"\nrun `batchctl --help` for usage\n"},
		{"status without id", []string{"status"}, "batchctl status: need exactly one <batch> id, got 0 arguments\n" + hint("status")},
		{"status with two ids", []string{"status", "1", "2"}, "batchctl status: need exactly one <batch> id, got 2 arguments\n" + hint("status")},
		{"status abc", []string{"status", "abc"}, "batchctl status: batch id must be a positive number, not \"abc\"\n" + hint("status")},
		{"status 0", []string{"status", "0"}, "batchctl status: batch id must be a positive number, not \"0\"\n" + hint("status")},
		{"unknown state", []string{"rows", "1", "--state", "bogus"}, "batchctl rows: unknown state \"bogus\"\n" + hint("rows")},
		{"negative limit", []string{"rows", "1", "--limit", "-1"}, "batchctl rows: --limit must be 0 (all rows) or more, not -1\n" + hint("rows")},
		{"unknown flag", []string{"status", "1", "--bogus"}, "batchctl status: unknown flag: --bogus\n" + hint("status")},
		{"yaml", []string{"batches", "-o", "yaml"}, "batchctl batches: -o must be text or json, not \"yaml\"\n" + hint("batches")},
		{"-o a file", []string{"errors", "1", "-o", "errors.csv"}, "batchctl errors: -o must be text or json, not \"errors.csv\": name a file with -f/--file\n" + hint("errors")},
		{"import without file", []string{"import", "customers"}, "batchctl import: import needs <kind> <file>, got 1 arguments\n" + hint("import")},
		{"batches with an argument", []string{"batches", "1"}, "batchctl batches: batches takes no arguments\n" + hint("batches")},
		{"a connection string that is no database", []string{"batches", "--database", "customers"},
			"batchctl batches: --database \"customers\" is neither a PostgreSQL connection string (postgres://..., or host=... dbname=...) nor a SQLite file (a path ending in .db or .sqlite, or file:PATH)\n" + hint("batches")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setup(t)
			r := run(t, append(tc.args, "--database", c.database)...)
			if tc.name == "a connection string that is no database" {
				r = run(t, tc.args...)
			}
			if r.code != exitUsage || r.stdout != "" || r.stderr != tc.stderr {
				t.Errorf("want exit %d and stderr\n%s\ngot %s", exitUsage, tc.stderr, r)
			}
			// A bad command line is caught before the database is touched.
			if _, err := os.Stat(c.database); !os.IsNotExist(err) {
				t.Errorf("a usage error created the database (stat: %v)", err)
			}
		})
	}

	t.Run("no arguments", func(t *testing.T) {
		t.Parallel()
		r := run(t)
		if r.code != exitUsage || r.stdout != "" || r.stderr != rootUsage() {
			t.Errorf("want exit %d and the usage, got %s", exitUsage, r)
		}
	})
	t.Run("help", func(t *testing.T) {
		t.Parallel()
		r := run(t, "help")
		if r.code != exitOK || !strings.Contains(r.stdout, rootUsage()) || r.stderr != "" {
			t.Errorf("want exit 0 and the usage, got %s", r)
		}
	})
}

func TestKinds(t *testing.T) {
	t.Parallel()
	// A database in a folder that does not exist cannot be opened: kinds
	// must not try.
	nodb := filepath.Join(t.TempDir(), "missing", "rowfate.db")

	r := run(t, "kinds", "-o", "json", "--database", nodb)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("kinds -o json: %s", r)
	}
	var ks []jsonKind
	if err := json.Unmarshal([]byte(r.stdout), &ks); err != nil {
		t.Fatalf("kinds -o json is not JSON: %v\n%s", err, r)
	}
	// customers is both an import kind and an export kind; customers-tier
	// is a recalculation.
	if len(ks) != 3 || ks[0].Name != "customers" || ks[0].Direction != "import" || ks[1].Name != "customers-tier" || ks[1].Direction != "recalc" ||
		ks[2].Name != "customers" || ks[2].Direction != "export" {
		t.Fatalf("kinds: %+v", ks)
	}
	var cols []string
	for _, c := range ks[0].Columns {
		cols = append(cols, c.Name+"/"+c.Field)
	}
	if want := []string{"email/Email", "name/Name", "country/Country", "signup_date/SignupDate", "amount/Amount"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if want := []string{"email", "name", "signup_date"}; !slices.Equal(ks[0].Required, want) {
		t.Errorf("required %v, want %v", ks[0].Required, want)
	}

	r = run(t, "kinds", "--database", nodb)
	want := "customers (import)\ta tenant's customers keyed by email, upserted into the customers table\n" +
		"  columns: email, name, country, signup_date, amount\n" +
		"  effects: exactly-once\n" +
		"  required: email, name, signup_date\n" +
		"customers-tier (recalc)\trecalculate the tenant's customers' lifetime-value tier from their amount (parameter where: a filter such as 'country=DE and amount>=100')\n" +
		"  columns: email, amount\n" +
		"  effects: exactly-once\n" +
		"  required: email\n" +
		"customers (export)\tevery customer of the tenant, from the customers table, in id order\n" +
		"  columns: email, name, country, signup_date, amount\n"
	if r.code != exitOK || r.stdout != want {
		t.Errorf("want stdout\n%s\ngot %s", want, r)
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	c := setup(t)
	for range 2 { // migrating twice is a no-op
		if r := c.run("migrate"); r.code != exitOK || r.stdout != "schema is up to date\n" || r.stderr != "" {
			t.Fatalf("migrate: %s", r)
		}
	}
	if r := c.run("batches"); r.code != exitOK || r.stdout != "no batches\n" {
		t.Errorf("batches on a new database: %s", r)
	}
}

// TestDatabaseFlagBeatsEnv cannot be parallel: it sets DATABASE_URL.
func TestDatabaseFlagBeatsEnv(t *testing.T) {
	fromEnv := testdb.SQLitePath(t)
	fromFlag := testdb.SQLitePath(t)
	t.Setenv("DATABASE_URL", fromEnv)
	path := writeFile(t, "ok.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,10\n"))

	r := run(t, "import", "customers", path, "--database", fromFlag)
	if r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	if _, err := os.Stat(fromEnv); !os.IsNotExist(err) {
		t.Errorf("--database was given, yet $DATABASE_URL's database was created (stat: %v)", err)
	}
	flag := &session{t: t, database: fromFlag}
	if bs := flag.batches(); len(bs) != 1 {
		t.Errorf("--database has %d batches, want 1", len(bs))
	}

	// Without --database, $DATABASE_URL is used: read-only commands refuse
	// to invent a database there, migrate creates it.
	r = run(t, "batches")
	if r.code != exitError || !strings.Contains(r.stderr, "no such database: "+fromEnv) {
		t.Errorf("batches with $DATABASE_URL naming a missing file: %s", r)
	}
	if r := run(t, "migrate"); r.code != exitOK {
		t.Errorf("migrate with $DATABASE_URL: %s", r)
	}
	if _, err := os.Stat(fromEnv); err != nil {
		t.Errorf("migrate without --database did not use $DATABASE_URL: %v", err)
	}
	if r := run(t, "batches"); r.code != exitOK || r.stdout != "no batches\n" {
		t.Errorf("batches with $DATABASE_URL: %s", r)
	}
}
