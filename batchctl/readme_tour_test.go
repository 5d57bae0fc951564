package batchctl

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeTour runs the commands of README's "Kinds without Go" tour, as
// written, in order, on both stores: each must exit as its comment says
// (exit 0 unless it says "exit N"), and the table must end as the last
// comment says. A README edit that breaks a command breaks this test.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(readme), "<!-- tour -->\n")
	tour, _, ok2 := strings.Cut(tour, "<!-- /tour -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- tour --> ... <!-- /tour --> block")
	}
	var lines []string
	for _, l := range strings.Split(tour, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 6 {
		t.Fatalf("the tour has %d commands:\n%s", len(lines), tour)
	}
	bothStores(t, func(t *testing.T, s *session) {
		dir := t.TempDir()
		for _, line := range lines {
			words, comment := shellWords(t, line)
			if len(words) < 2 || words[0] != "batchctl" {
				t.Fatalf("not a batchctl command: %q", line)
			}
			args := words[1:]
			for i, a := range args {
				switch {
				case strings.HasPrefix(a, "fixtures/"):
					args[i] = filepath.Join("..", a)
				case !strings.Contains(a, "/") && regexp.MustCompile(`\.(csv|json|yaml|xlsx)$`).MatchString(a):
					args[i] = filepath.Join(dir, a) // a file the tour writes
				}
			}
			want := exitOK
			if m := regexp.MustCompile(`\bexit (\d)\b`).FindStringSubmatch(comment); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			r := s.run(args...)
			if r.code != want {
				t.Fatalf("%s\nwant exit %d, got %s", line, want, r)
			}
			if m := regexp.MustCompile(`(\d+) succeeded, (\d+) invalid`).FindStringSubmatch(comment); m != nil {
				if !strings.Contains(r.stdout, "succeeded  "+pad(m[1])) || !strings.Contains(r.stdout, "invalid  "+pad(m[2])) {
					t.Errorf("%s\nwant %s succeeded and %s invalid: %s", line, m[1], m[2], r)
				}
			}
		}
		r := s.run("export", "sales", "-f", "-")
		if r.code != exitOK || strings.Count(r.stdout, ",closed") != 6 || !strings.Contains(r.stdout, "S-1005,Ed,12.50,2025-03-04,open") ||
			!strings.Contains(r.stdout, "S-1002,Bob,80.50,2025-03-02,closed") {
			t.Errorf("the table after the tour: %s", r)
		}
	})
}

// pad right-aligns a count as the outcome table prints it (width 2 here).
func pad(n string) string {
	if len(n) < 2 {
		return " " + n
	}
	return n
}

// shellWords splits a command line as a POSIX shell would for the tour's
// needs ('...', "...", words), and returns the trailing # comment.
func shellWords(t *testing.T, line string) ([]string, string) {
	t.Helper()
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
	)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			return words, line[i:]
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, ""
}
