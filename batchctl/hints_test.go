package batchctl

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hintPatterns find the commands batchctl suggests in its output: after
// "...: ", in backticks, or in parentheses.
var hintPatterns = []*regexp.Regexp{
	regexp.MustCompile("`(batchctl [^`]+)`"),
	regexp.MustCompile(`(?m):\s+(batchctl [^\n()]+?)\s*$`),
	regexp.MustCompile("\\([^()`]*?(batchctl [^)`]+)\\)"),
}

// hintsIn returns the runnable commands an output suggests: those without a
// placeholder (NAME, BATCH, <batch>, https://...) for the user to fill in.
func hintsIn(out string) []string {
	var hints []string
	seen := map[string]bool{}
	for _, re := range hintPatterns {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			h := strings.TrimSpace(m[1])
			if seen[h] || strings.ContainsAny(h, "<>") || strings.Contains(h, "...") || regexp.MustCompile(`\b[A-Z]{3,}\b`).MatchString(h) {
				continue
			}
			seen[h] = true
			hints = append(hints, h)
		}
	}
	return hints
}

// checkHints runs every command a SQLite session's output suggests, as
// printed, on a copy of the database as it is now, and fails the test when
// one is refused (exit 1, 2 or 4): every hint batchctl prints must run as
// printed. watch, serve and help are left out (they wait, or print).
func checkHints(t *testing.T, database string, r result) {
	t.Helper()
	if strings.Contains(database, "://") || strings.Contains(database, "=") {
		return // PostgreSQL: its sessions share no copyable file
	}
	for _, h := range hintsIn(r.stdout + "\n" + r.stderr) {
		words, _ := shellWords(t, h)
		if len(words) < 2 || words[0] != "batchctl" {
			continue
		}
		switch words[1] {
		case "watch", "serve", "help", "completion":
			continue
		}
		copyDB := copySQLite(t, database)
		args := words[1:]
		for i := range args {
			if args[i] == "--database" && i+1 < len(args) {
				args[i+1] = copyDB
			}
		}
		if !strings.Contains(h, "--database") {
			continue // it runs where the test's own command ran: nothing to copy
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		var stdout, stderr bytes.Buffer
		code := Run(ctx, builtins, args, strings.NewReader(""), &stdout, &stderr)
		cancel()
		if code != exitOK && code != exitRows {
			t.Errorf("the hint %q of\n%s\nexits %d: %s%s", h, r, code, stdout.String(), stderr.String())
		}
	}
}

// copySQLite copies a SQLite database (and its WAL) to a new file.
func copySQLite(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "hint.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		in, err := os.Open(path + suffix)
		if err != nil {
			continue
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			in.Close()
			t.Fatal(err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestHintsIn: the hints of an output are found in each form batchctl
// writes them, and those with a placeholder are left out.
func TestHintsIn(t *testing.T) {
	t.Parallel()
	out := "list the invalid rows: batchctl rows 1 --state invalid --database a.db\n" +
		"reconcile with `batchctl reconcile BATCH` (see `batchctl reconcile --help`)\n" +
		"no stored kind x (list them: batchctl kinds --database a.db)\n" +
		"run `batchctl migrate --database a.db`\n"
	got := hintsIn(out)
	want := []string{"batchctl reconcile --help", "batchctl migrate --database a.db", "batchctl rows 1 --state invalid --database a.db", "batchctl kinds --database a.db"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("hints:\n got %q\nwant %q", got, want)
	}
}
