package layout_test

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/rowfate/rowfate"

// deps returns the packages the pattern's packages depend on, themselves
// included.
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pattern).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pattern, err)
	}
	return strings.Fields(string(out))
}

// TestLayers: each package imports only the layers below it, so the path
// of one row goes down (format reader -> rows -> validate -> batch ->
// store) and nothing reaches back up. The store drivers compile neither
// the engine, nor the validator, nor a file format: the check of
// `go list -deps ./store/... | grep -c excelize` printing 0.
func TestLayers(t *testing.T) {
	t.Parallel()
	engine := []string{mod + "/batch", mod + "/validate", mod + "/processors", mod + "/store/"}
	formats := []string{mod + "/rows/", "github.com/xuri/excelize"}
	for _, tc := range []struct {
		pattern   string
		forbidden []string // package paths, or prefixes ending in /
	}{
		{mod + "/rows", append(append([]string{"github.com/go-playground/validator"}, engine...), formats...)},
		{mod + "/rows/csvfile", append([]string{"github.com/go-playground/validator", "github.com/xuri/excelize"}, engine...)},
		{mod + "/rows/xlsxfile", append([]string{"github.com/go-playground/validator"}, engine...)},
		{mod + "/validate", append([]string{mod + "/batch", mod + "/store/"}, formats...)},
		{mod + "/batch", []string{mod + "/store/", mod + "/processors", "github.com/jackc/pgx", "modernc.org/sqlite"}},
		{mod + "/batch/driver", append([]string{"github.com/go-playground/validator", mod + "/batch", mod + "/validate"}, formats...)},
		{mod + "/store/...", append([]string{"github.com/go-playground/validator", mod + "/batch", mod + "/validate", mod + "/processors"}, formats...)},
		{mod + "/migrations", []string{mod + "/"}},
		// The records are a leaf: a front end, a store and the engine all
		// speak of them, so they depend on nothing of those.
		{mod + "/batchtype", append([]string{"github.com/go-playground/validator", mod + "/batch", mod + "/validate", mod + "/processors", mod + "/store/", mod + "/server", mod + "/progress"}, formats...)},
		// A Table Schema is read and compiled below the engine: it knows
		// rows and the validator, not batches or stores.
		{mod + "/tableschema", append([]string{mod + "/batch", mod + "/processors", mod + "/server", "github.com/xuri/excelize"}, mod+"/store/")},
		// The CLI as a library brings no built-in kind: a program of one's
		// own registers the kinds it wants (processors.Register, if any).
		{mod + "/batchctl", []string{mod + "/processors/customers", mod + "/processors/exec", mod + "/processors/httpcall"}},
		{mod + "/progress", append([]string{"github.com/go-playground/validator", mod + "/batch", mod + "/validate", mod + "/processors", mod + "/store/"}, formats...)},
	} {
		for _, dep := range deps(t, tc.pattern) {
			if dep == tc.pattern {
				continue
			}
			for _, f := range tc.forbidden {
				if matches(dep, f) && !allowed(tc.pattern, dep) {
					t.Errorf("%s depends on %s", tc.pattern, dep)
				}
			}
		}
	}
}

// matches reports whether a package path falls under a rule: a rule
// ending in / is a prefix of subpackages; any other names a package (or a
// module) and everything under it.
func matches(dep, rule string) bool {
	if strings.HasSuffix(rule, "/") {
		return strings.HasPrefix(dep, rule)
	}
	return dep == rule || strings.HasPrefix(dep, rule+"/")
}

// allowed lists the subpackages a prefix rule lets through: the seam
// batch/driver sits below the engine, and a store package may depend on
// its siblings' shared parts.
func allowed(pattern, dep string) bool {
	switch {
	case dep == mod+"/batch/driver":
		return true
	case strings.HasPrefix(pattern, mod+"/store/") && strings.HasPrefix(dep, mod+"/store/"):
		return true
	}
	return false
}

// TestEngineReadsThroughFormats: the engine reads and writes files
// through rows/fileformat, the one place that knows the formats, never a
// format's package directly (its tests may).
func TestEngineReadsThroughFormats(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, mod+"/batch").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == mod+"/rows/csvfile" || imp == mod+"/rows/xlsxfile" {
			t.Errorf("batch imports %s: go through rows/fileformat", imp)
		}
	}
}

// TestFrontDoor: the front ends — the HTTP service and the CLI (the
// library batchctl and its program cmd/batchctl) — call the
// engine (package batch) and nothing below it. They may open a store
// (store/sqlite, store/postgres construct one), but never name the seam
// (batch/driver) or the shared SQL: what they read and write goes through
// batch.Engine, and the records they show are batchtype's.
func TestFrontDoor(t *testing.T) {
	t.Parallel()
	forbidden := []string{mod + "/batch/driver", mod + "/store/internal/storesql"}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"/server/...", mod+"/batchctl/...", mod+"/cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if f[0] == mod+"/cmd/rowfate-chaos" {
			// The harness is no front end: it checks the stored rows
			// below the engine on purpose, against what the engine said.
			continue
		}
		n++
		for _, imp := range f[1:] {
			for _, bad := range forbidden {
				if imp == bad {
					t.Errorf("front end %s imports %s: call the engine (batch.Engine) instead", f[0], imp)
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("go list found %d front-end packages, want server, server/admin, batchctl and cmd/batchctl at least", n)
	}
}
