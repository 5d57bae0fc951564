package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
)

func runFair(t *testing.T, newStore NewStoreFunc) {
	t.Run("FairTurns", func(t *testing.T) { t.Parallel(); testFairTurns(t, newStore(t)) })
	t.Run("ResumeQueuesAtTheBack", func(t *testing.T) { t.Parallel(); testResumeAtTheBack(t, newStore(t)) })
}

// claimTenants claims n chunks and returns the tenant of each, in order.
func claimTenants(t *testing.T, s driver.Store, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = claim(t, s, driver.ChunkClaimParams{}).TenantID
	}
	return out
}

// testFairTurns: tenants take turns chunk by chunk, whenever each one's
// batches were created. A tenant with three batches queued first does not
// make a tenant that came second wait for all three, and a tenant that
// arrives while work is under way is served from the next turn on, not
// after the backlog. (Claims in the order chunks were last claimed, the
// old rule, served batches first in, first out: the second tenant waited
// for all twelve chunks.)
func testFairTurns(t *testing.T, s driver.Store) {
	for range 3 {
		ingest(t, s, "heavy", 8, 2) // 4 chunks each
	}
	ingest(t, s, "light", 4, 2) // 2 chunks
	got := claimTenants(t, s, 6)
	if want := "heavy light heavy light heavy heavy"; strings.Join(got, " ") != want {
		t.Fatalf("the first six claims went to %v, want %s", got, want)
	}
	ingest(t, s, "late", 6, 2) // 3 chunks, while heavy has 8 left
	got = claimTenants(t, s, 6)
	if want := "late heavy late heavy late heavy"; strings.Join(got, " ") != want {
		t.Fatalf("after a tenant arrived late, the claims went to %v, want %s", got, want)
	}
	if rest := claimTenants(t, s, 5); strings.Join(rest, " ") != strings.TrimSpace(strings.Repeat("heavy ", 5)) {
		t.Fatalf("the rest went to %v", rest)
	}
}

// testResumeAtTheBack: a paused batch that is resumed joins the back of
// its tenant's queue, behind the other tenants' work, instead of taking
// the turns it had before the pause and going ahead of everyone.
func testResumeAtTheBack(t *testing.T, s driver.Store) {
	ctx := t.Context()
	a := ingest(t, s, "a", 6, 2) // 3 chunks, turns 0-2
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: "a", ID: a.ID}, true); err != nil {
		t.Fatal(err)
	}
	ingest(t, s, "b", 6, 2) // 3 chunks, turns 0-2
	if got := claimTenants(t, s, 1); got[0] != "b" {
		t.Fatalf("claimed %v while a's batch was paused", got)
	}
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: "a", ID: a.ID}, false); err != nil {
		t.Fatal(err)
	}
	got := claimTenants(t, s, 5)
	// a had been given turns 0-2 before the pause; the resume queues its
	// chunks after them (3-5), so b's turns 1 and 2 come first.
	if want := "b b a a a"; strings.Join(got, " ") != want {
		t.Fatalf("after the resume, the claims went to %v, want %s", got, want)
	}
	if _, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute}); !errors.Is(err, driver.ErrNoWork) {
		t.Fatalf("a seventh claim = %v, want ErrNoWork: there are six chunks", err)
	}
}
