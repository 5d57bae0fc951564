package batchctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestVersion: version and --version print the build's version and the
// schema version it expects of a database, and open nothing.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := run(t, "version")
	if r.code != exitOK || !regexp.MustCompile(`^batchctl .+ \(go.+\)\nschema: sqlite [1-9]\d*, postgres [1-9]\d*\n$`).MatchString(r.stdout) {
		t.Fatalf("version: %s", r)
	}
	if f := run(t, "--version"); f.code != exitOK || f.stdout != r.stdout {
		t.Errorf("--version: %s, want the stdout of version:\n%s", f, r.stdout)
	}
}

// TestFlagUsageTakesNoBacktick: pflag reads a `word` in a flag's usage as
// the name of its argument, so a boolean flag documented with one was
// shown as taking an argument (--no-work batchctl worker).
func TestFlagUsageTakesNoBacktick(t *testing.T) {
	t.Parallel()
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: a backtick in %q", cmd.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk((&cli{}).rootCommand())
}

// TestErrorsWithoutProblemRows: the report of a batch with no problem
// rows says so and writes no file.
func TestErrorsWithoutProblemRows(t *testing.T) {
	t.Parallel()
	c := setup(t)
	good := writeFile(t, "good.csv", []byte("email,name,country,signup_date,amount\na@example.com,Ann,FR,2020-01-02,10\n"))
	if r := c.run("import", "customers", good); r.code != exitOK {
		t.Fatalf("import: %s", r)
	}
	out := filepath.Join(t.TempDir(), "errors.csv")
	if r := c.run("errors", "1", "-f", out); r.code != exitOK || !strings.Contains(r.stderr, "batch 1 has no problem rows: nothing to fix, no file written") {
		t.Errorf("errors: %s", r)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a report of no rows was written (stat: %v)", err)
	}
}

// TestInferHeaderRowHelp: schema infer has no kind whose columns would
// find the header, and its help says what it does instead.
func TestInferHeaderRowHelp(t *testing.T) {
	t.Parallel()
	r := run(t, "schema", "infer", "--help")
	if r.code != exitOK || strings.Contains(r.stdout, "kind's required columns") || !strings.Contains(r.stdout, "the first row that is not empty") {
		t.Errorf("schema infer --help: %s", r)
	}
}

// TestTemplateJSON: template -o json prints the kind's columns as data
// (it printed nothing).
func TestTemplateJSON(t *testing.T) {
	t.Parallel()
	c := setup(t)
	var cols []struct {
		Name     string `json:"name"`
		Example  string `json:"example"`
		Required bool   `json:"required"`
	}
	c.runJSON(exitOK, &cols, "template", "customers", "-o", "json")
	if len(cols) != 5 || cols[0].Name != "email" || !cols[0].Required || cols[0].Example != "ada@example.com" {
		t.Errorf("template -o json: %+v", cols)
	}
}

// TestErrorsAsJSON: with -o json, a failed command's error is one JSON
// object on stderr, with its exit code and the options that settle it.
func TestErrorsAsJSON(t *testing.T) {
	t.Parallel()
	c := setup(t)
	r := c.run("status", "7", "-o", "json")
	var e struct {
		Command string `json:"command"`
		Error   string `json:"error"`
		Exit    int    `json:"exit"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || r.code != exitError || e.Exit != exitError || e.Command != "batchctl status" || e.Error == "" {
		t.Errorf("status of no batch -o json: %v: %s", err, r)
	}
	missing := filepath.Join(t.TempDir(), "nope.csv")
	r = c.run("import", "customers", missing, "-o", "json")
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || r.code != exitUsage || e.Exit != exitUsage {
		t.Errorf("import of no file -o json: %v: %s", err, r)
	}
}

// TestCompletionOffersValues: the shell completion offers batch ids, kinds, states and
// locales, not only commands and flags.
func TestCompletionOffersValues(t *testing.T) {
	t.Parallel()
	c := setup(t)
	if r := c.run("import", "customers", fixture); r.code != exitRows {
		t.Fatalf("import: %s", r)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "status", ""}, "1\tcustomers finished"},
		{[]string{"__complete", "rerun", ""}, "1\tcustomers"},
		{[]string{"__complete", "import", ""}, "customers\t"},
		{[]string{"__complete", "rows", "1", "--state", ""}, "\ninvalid\n"},
		{[]string{"__complete", "import", "customers", "f.csv", "--locale", ""}, "\nde\n"},
		{[]string{"__complete", "import", "customers", "f.csv", "--date-order", ""}, "dmy\nmdy\n"},
	} {
		// The word completed is the last: --database goes before it.
		args := append([]string{tc.args[0], "--database", c.database}, tc.args[1:]...)
		if r := run(t, args...); r.code != exitOK || !strings.Contains("\n"+r.stdout, tc.want) {
			t.Errorf("%v: want %q in %s", tc.args, tc.want, r)
		}
	}
}
