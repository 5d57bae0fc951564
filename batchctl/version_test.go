package batchctl

import (
	"regexp"
	"testing"
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
