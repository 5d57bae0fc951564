package batchctl

import (
	"strings"
	"testing"
)

// TestMaxInvalid: --max-invalid rejects a file whose invalid rows pass it,
// nothing written, on both stores; at the bound it imports (issue 27, item
// 9). fixtures/customers.csv has 15 invalid rows of 300 (5%).
func TestMaxInvalid(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, s *session) {
		for _, max := range []string{"10", "4.9%", "0"} {
			r := s.run("import", "customers", fixture, "--max-invalid", max)
			if r.code != exitRejected || !strings.Contains(r.stderr, "15 of 300 rows are invalid, more than the "+max+" allowed") || !strings.Contains(r.stderr, "--max-invalid 15") {
				t.Errorf("--max-invalid %s: %s", max, r)
			}
			if r := s.run("import", "customers", fixture, "--max-invalid", max, "--dry-run"); r.code != exitRejected {
				t.Errorf("--max-invalid %s --dry-run: %s", max, r)
			}
		}
		if bs := s.batches(); len(bs) != 0 {
			t.Fatalf("a rejected file left batches: %+v", bs)
		}
		if r := s.run("import", "customers", fixture, "--max-invalid", "5%"); r.code != exitRows || !strings.Contains(r.stdout, "invalid   15") {
			t.Errorf("--max-invalid 5%%: %s", r)
		}
		if r := s.run("import", "customers", fixture, "--max-invalid", "lots"); r.code != exitUsage {
			t.Errorf("--max-invalid lots: %s", r)
		}
	})
}
