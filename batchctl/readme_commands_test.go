package batchctl

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/internal/testenv"
)

// The rule that keeps README.md honest, as TestReadmeCommands applies it:
//
//   - A line of an indented code block of README.md whose first word is a
//     program (readmePrograms) is a command line. Other lines are comments
//     (# ...) or a program's output, and are not run.
//   - A marker line right before a block names it: <!-- run NAME --> is a
//     block TestReadmeCommands runs (readmeBlocks has a runner per NAME),
//     <!-- tour --> is TestReadmeTour's, <!-- synopsis --> is the list of
//     command forms (placeholders such as <kind>, [--state S], ..., a|b),
//     which is not run.
//   - Every other command line must be one of readmeNotRun, with the reason.
//
// So a concrete command added to README.md outside a run block, a run block
// no runner knows, or a runner whose block README.md lost, fails the test.
var readmePrograms = map[string]bool{"batchctl": true, "go": true, "make": true}

// readmeNotRun are README's command lines no test runs as written, and why.
var readmeNotRun = map[string]string{
	"make test": "the whole suite, this test among it",
}

// readmeLine is one line of an indented code block of README.md.
type readmeLine struct {
	no      int    // README.md's line number
	text    string // without the indentation
	words   []string
	comment string // the trailing # comment
	command bool   // the first word is a program
}

// readmeBlock is an indented code block of README.md and the marker that
// names it ("" when none does).
type readmeBlock struct {
	marker string
	lines  []readmeLine
}

var readmeMarker = regexp.MustCompile(`^<!-- (run [a-z-]+|tour|synopsis) -->$`)

// parseReadme returns README.md's indented code blocks: outside ``` fences,
// lines indented by four spaces after a blank line or a marker.
func parseReadme(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		fenced bool
		marker string
		prev   = "" // the previous line; "" is blank
	)
	for i, l := range strings.Split(readme, "\n") {
		no := i + 1
		switch {
		case strings.HasPrefix(l, "```"):
			fenced, cur, marker = !fenced, nil, ""
		case fenced:
		case readmeMarker.MatchString(l):
			marker, cur = readmeMarker.FindStringSubmatch(l)[1], nil
		case strings.HasPrefix(l, "    ") && (cur != nil || strings.TrimSpace(prev) == "" || readmeMarker.MatchString(prev)):
			if cur == nil {
				blocks = append(blocks, readmeBlock{marker: marker})
				cur, marker = &blocks[len(blocks)-1], ""
			}
			text := strings.TrimSpace(l)
			rl := readmeLine{no: no, text: text}
			if f := strings.Fields(text); !strings.HasPrefix(text, "#") {
				rl.command = readmePrograms[f[0]]
				if strings.HasPrefix(cur.marker, "run ") {
					// Only what is run is read as a shell would: the
					// synopsis's descriptions have apostrophes.
					rl.words, rl.comment = shellWords(t, text)
				}
			}
			cur.lines = append(cur.lines, rl)
		case strings.TrimSpace(l) == "":
		default:
			cur, marker = nil, ""
		}
		prev = l
	}
	return blocks
}

// TestReadmeCommands runs README.md's command lines as written (see the
// rule above): the first screen's go run and go install in a copy of the
// module, then each run block with the installed batchctl in a directory
// of its own, as a user would in a shell, checking what each comment
// says. Placeholders are replaced by what the test has (the database,
// the printed token, a free port), and nothing else.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	runners := map[string]func(t *testing.T, sh *readmeShell, lines []readmeLine){
		"run loop":  readmeLoop,
		"run watch": readmeWatch,
		"run serve": readmeServe,
	}
	blocks := map[string][]readmeLine{}
	for _, b := range parseReadme(t, string(readme)) {
		for _, l := range b.lines {
			if !l.command {
				continue
			}
			switch {
			case b.marker == "synopsis" || b.marker == "tour":
			case strings.HasPrefix(b.marker, "run "):
				if _, ok := runners[b.marker]; !ok && b.marker != "run first-screen" && b.marker != "run install" {
					t.Errorf("README.md:%d: <!-- %s --> is a block TestReadmeCommands does not know: add its runner", l.no, b.marker)
				}
			case readmeNotRun[l.text] != "":
			default:
				t.Errorf("README.md:%d: %q is a command no test runs: put its block under a <!-- run NAME --> marker and give it a runner in TestReadmeCommands", l.no, l.text)
			}
		}
		if strings.HasPrefix(b.marker, "run ") {
			blocks[b.marker] = append(blocks[b.marker], b.lines...)
		}
	}
	for _, name := range []string{"run first-screen", "run install", "run loop", "run watch", "run serve"} {
		if len(blocks[name]) == 0 {
			t.Fatalf("README.md has no <!-- %s --> block, which TestReadmeCommands runs", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	bin := readmeFirstScreen(t, blocks["run first-screen"], blocks["run install"])
	for name, fn := range runners {
		t.Run(strings.TrimPrefix(name, "run "), func(t *testing.T) {
			t.Parallel()
			fn(t, &readmeShell{t: t, bin: bin}, blocks[name])
		})
	}
}

// readmeFirstScreen runs the first screen's go run and go install in a
// copy of the module (symbolic links to its files, so that ./rowfate.db is
// created there, not in the source tree) and returns the installed
// batchctl. go run reports the import's exit 3 as 1, as README says.
func readmeFirstScreen(t *testing.T, goRun, install []readmeLine) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	module := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" || strings.HasPrefix(e.Name(), "rowfate.db") || e.Name() == "rowfate-files" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(module, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	gobin := t.TempDir()
	// -trimpath: the build does not depend on the copy's path, so the
	// build cache serves every run after the first.
	sh := &readmeShell{t: t, dir: module, env: []string{"GOFLAGS=-trimpath", "GOBIN=" + gobin}}

	for _, l := range goRun {
		if !l.command {
			continue
		}
		r := sh.run(l)
		if r.code != 1 || !strings.Contains(r.stderr, "exit status 3") {
			t.Fatalf("README.md:%d: %s\nwant go run's exit 1 for the import's 3 (invalid rows in the fixture), got %s", l.no, l.text, r)
		}
		if !strings.Contains(r.stdout, "batchctl rows 1 --state invalid") {
			t.Errorf("README.md:%d: the import does not say how to list the bad rows (batchctl rows 1 --state invalid): %s", l.no, r)
		}
		if _, err := os.Stat(filepath.Join(module, "rowfate.db")); err != nil {
			t.Errorf("README.md:%d: ./rowfate.db was not created: %v", l.no, err)
		}
	}
	for _, l := range install {
		if !l.command {
			continue
		}
		if r := sh.run(l); r.code != exitOK {
			t.Fatalf("README.md:%d: %s\n%s", l.no, l.text, r)
		}
		// The comment's promise: batchctl version says which build.
		if !strings.Contains(l.comment, "batchctl version") {
			t.Fatalf("README.md:%d: the comment no longer names batchctl version: update the test", l.no)
		}
	}
	bin := filepath.Join(gobin, "batchctl")
	sh.bin = bin
	if r := sh.run(readmeLine{text: "batchctl version", words: []string{"batchctl", "version"}, command: true}); r.code != exitOK || !strings.HasPrefix(r.stdout, "batchctl ") {
		t.Fatalf("batchctl version: %s", r)
	}
	return bin
}

// readmeLoop runs the loop for a file with bad rows, on both stores, with
// customers.csv the fixture (15 invalid rows); at "fix errors.csv" it
// gives every flagged cell a valid value, as a user would in a
// spreadsheet, so the re-run of batch 1 ends with every row succeeded.
func readmeLoop(t *testing.T, sh *readmeShell, lines []readmeLine) {
	bothStores(t, func(t *testing.T, s *session) {
		sh := &readmeShell{t: t, bin: sh.bin, dir: t.TempDir()}
		if strings.HasPrefix(s.database, "postgres") {
			sh.env = []string{"DATABASE_URL=" + s.database}
		}
		copyFile(t, "../fixtures/customers.csv", filepath.Join(sh.dir, "customers.csv"))
		fixed := false
		for _, l := range lines {
			if !l.command {
				if strings.Contains(l.text, "fix errors.csv") {
					fixErrorReport(t, filepath.Join(sh.dir, "errors.csv"))
					fixed = true
				}
				continue
			}
			r := sh.run(l)
			sh.check(l, r)
			if m := regexp.MustCompile(`a re-run of batch (\d+)`).FindStringSubmatch(l.comment); m != nil {
				if !strings.Contains(r.stderr, "re-running batch "+m[1]) || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "succeeded 300 total 300") {
					t.Errorf("README.md:%d: %s\nwant a re-run of batch %s, every row succeeded: %s", l.no, l.text, m[1], r)
				}
			}
		}
		if !fixed {
			t.Error(`the loop has no "# fix errors.csv ..." step`)
		}
	})
}

// fixErrorReport gives each cell an error names a valid value, leaving the
// title, the header and the row and error columns as they are.
func fixErrorReport(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	title, body, _ := bytes.Cut(data, []byte("\n"))
	records, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil || len(records) < 2 {
		t.Fatalf("read %s: %v (%d records)", path, err, len(records))
	}
	col := map[string]int{}
	for i, h := range records[0] {
		col[h] = i
	}
	valid := map[string]func(i int) string{
		"email":       func(i int) string { return fmt.Sprintf("fixed%d@example.com", i) },
		"name":        func(int) string { return "Fixed Name" },
		"country":     func(int) string { return "DE" },
		"signup_date": func(int) string { return "2020-01-02" },
		"amount":      func(int) string { return "1.00" },
	}
	for i, rec := range records[1:] {
		for field, v := range valid {
			if strings.Contains(rec[col["error"]], field+":") {
				rec[col[field]] = v(i)
			}
		}
	}
	var out bytes.Buffer
	out.Write(title)
	out.WriteString("\n")
	w := csv.NewWriter(&out)
	_ = w.WriteAll(records)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readmeWatch runs the big.csv block on SQLite, the database it names
// (none: ./rowfate.db; a worker needs no credential there), with a
// big.csv of a few thousand rows: the import creates the batch the
// comment names, the worker runs in the background until the work is
// done, and watch follows the batch to its end.
func readmeWatch(t *testing.T, sh *readmeShell, lines []readmeLine) {
	sh.dir = t.TempDir()
	var big strings.Builder
	big.WriteString("email,name,country,signup_date,amount\n")
	for i := range testenv.Pick(3_000, 20_000) {
		fmt.Fprintf(&big, "c%d@example.com,Customer %d,FR,2021-03-04,%d.50\n", i, i, i%500)
	}
	writeFileAt(t, filepath.Join(sh.dir, "big.csv"), big.String())
	ran := 0
	for _, l := range lines {
		if !l.command {
			continue
		}
		ran++
		r := sh.run(l)
		sh.check(l, r)
		if m := regexp.MustCompile(`batch \d+ created \(.*\)`).FindString(l.comment); m != "" && !strings.Contains(r.stderr, m) {
			t.Errorf("README.md:%d: %s\nwant %q on stderr: %s", l.no, l.text, m, r)
		}
	}
	if ran != 3 {
		t.Errorf("the watch block has %d commands, the test expects import, worker &, watch", ran)
	}
	for _, r := range sh.waitBackground() {
		if r.code != exitOK {
			t.Errorf("a background command: %s", r)
		}
	}
}

// readmeServe runs the service block on PostgreSQL: postgres://db/app is
// the test's database, the rfw_... the worker token the block printed, and
// :8080 a free port (the machine is shared). serve must answer the admin
// page on its address and the API with the token the block created; then
// it is stopped.
func readmeServe(t *testing.T, sh *readmeShell, lines []readmeLine) {
	s := pgSession(t)
	sh.dir = t.TempDir()
	sh.subst = map[string]string{"postgres://db/app": s.database, ":8080": "127.0.0.1:0"}
	var apiToken string
	for _, l := range lines {
		if !l.command {
			continue
		}
		switch {
		case len(l.words) > 1 && l.words[1] == "serve":
			base, stop := sh.start(l)
			for path, want := range map[string]string{"/": "<html", "/v1/batches": `"batches"`} {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+apiToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
					t.Errorf("README.md:%d: GET %s: %d %s", l.no, path, resp.StatusCode, body)
				}
			}
			stop()
		default:
			r := sh.run(l)
			sh.check(l, r)
			token := strings.TrimSpace(r.stdout)
			switch {
			case strings.HasPrefix(token, "rfw_"):
				sh.subst["rfw_..."] = token
			case l.words[1] == "token":
				apiToken = token
			}
		}
	}
	if apiToken == "" || sh.subst["rfw_..."] == "" {
		t.Errorf("the serve block printed no API token (%q) or no worker token (%q)", apiToken, sh.subst["rfw_..."])
	}
}

// readmeShell runs README's command lines as a shell would in dir, with
// batchctl the installed one and the environment of the test process
// without the variables that would name another database or credential.
type readmeShell struct {
	t     *testing.T
	bin   string
	dir   string
	env   []string          // added to the environment
	subst map[string]string // README's placeholders and what stands for them
	bg    []*exec.Cmd
	bgOut []*bytes.Buffer
}

func (sh *readmeShell) command(l readmeLine) *exec.Cmd {
	sh.t.Helper()
	words := append([]string(nil), l.words...)
	if words[len(words)-1] == "&" {
		words = words[:len(words)-1]
	}
	for i, w := range words {
		for placeholder, v := range sh.subst {
			if w == placeholder {
				words[i] = v
			}
		}
		if strings.Contains(words[i], "...") {
			sh.t.Fatalf("README.md:%d: %q has a placeholder the test does not fill", l.no, w)
		}
	}
	name := words[0]
	switch name {
	case "batchctl":
		name = sh.bin
	case "go":
	default:
		sh.t.Fatalf("README.md:%d: no way to run %q", l.no, name)
	}
	cmd := exec.Command(name, words[1:]...)
	cmd.Dir = sh.dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DATABASE_URL", "ROWFATE_PG_SCHEMA", "ROWFATE_WORKER_TOKEN", "ROWFATE_TENANT", "GOFLAGS", "GOBIN":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, sh.env...)
	return cmd
}

// run runs a line to its end, or starts it when it ends with &.
func (sh *readmeShell) run(l readmeLine) result {
	sh.t.Helper()
	cmd := sh.command(l)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if l.words[len(l.words)-1] == "&" {
		cmd.Stderr = &stdout
		if err := cmd.Start(); err != nil {
			sh.t.Fatal(err)
		}
		sh.t.Cleanup(func() { _ = cmd.Process.Kill() })
		sh.bg, sh.bgOut = append(sh.bg, cmd), append(sh.bgOut, &stdout)
		return result{}
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		sh.t.Fatalf("README.md:%d: %v", l.no, err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// check fails unless the line exited as its comment says: exit N when it
// says "exit N", else 0.
func (sh *readmeShell) check(l readmeLine, r result) {
	sh.t.Helper()
	want := exitOK
	if m := regexp.MustCompile(`\bexit (\d)\b`).FindStringSubmatch(l.comment); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	if r.code != want {
		sh.t.Fatalf("README.md:%d: %s\nwant exit %d, got %s", l.no, l.text, want, r)
	}
}

// waitBackground waits for the lines started with &.
func (sh *readmeShell) waitBackground() []result {
	var out []result
	for i, cmd := range sh.bg {
		code := 0
		if err := cmd.Wait(); err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		out = append(out, result{code: code, stdout: sh.bgOut[i].String()})
	}
	return out
}

// start starts a server line and returns its URL, from its "serving on"
// line, and a function that stops it with SIGINT and waits for it.
func (sh *readmeShell) start(l readmeLine) (string, func()) {
	sh.t.Helper()
	cmd := sh.command(l)
	u, _ := serveProcess(sh.t, cmd)
	return u, func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, to, string(data))
}

func writeFileAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
