package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
)

// testWorkerListRevoke: WorkerList shows every credential, revoked ones
// too, with its tenants and times and never its hash; WorkerRevoke ends a
// credential for good (WorkerAuth no longer finds it), keeps the first
// revocation's time when repeated, and is ErrNotFound for an unknown name.
func testWorkerListRevoke(t *testing.T, s driver.Store) {
	ctx := context.Background()
	ws, err := s.WorkerList(ctx, driver.WorkerListParams{})
	if err != nil || ws == nil || len(ws) != 0 {
		t.Fatalf("list of no credential = %#v, %v; want an empty list", ws, err)
	}
	for _, p := range []driver.WorkerCreateParams{
		{Name: "w-acme", TokenHash: "ha", TenantIDs: []string{"acme"}},
		{Name: "w-all", TokenHash: "hall"},
		{Name: "w-globex", TokenHash: "hg", TenantIDs: []string{"globex", "initech"}},
	} {
		if err := s.WorkerCreate(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ws, err = s.WorkerList(ctx, driver.WorkerListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workerNames(ws); got != "[w-acme w-all w-globex]" {
		t.Fatalf("list = %s, want every credential by name", got)
	}
	for _, w := range ws {
		if w.CreatedAt.IsZero() || w.RevokedAt != nil {
			t.Errorf("%s: created %v, revoked %v", w.Name, w.CreatedAt, w.RevokedAt)
		}
	}
	if ws[1].TenantIDs != nil || fmt.Sprint(ws[2].TenantIDs) != "[globex initech]" {
		t.Errorf("tenants: all %#v, globex %#v", ws[1].TenantIDs, ws[2].TenantIDs)
	}

	// A tenant's view: its own credentials and those of every tenant.
	ws, err = s.WorkerList(ctx, driver.WorkerListParams{TenantID: "initech"})
	if err != nil || workerNames(ws) != "[w-all w-globex]" {
		t.Fatalf("list for initech = %s, %v", workerNames(ws), err)
	}

	if err := s.WorkerRevoke(ctx, driver.WorkerRevokeParams{Name: "w-acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WorkerAuth(ctx, "ha"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("auth of a revoked credential = %v, want ErrNotFound", err)
	}
	if w, err := s.WorkerAuth(ctx, "hall"); err != nil || w.Name != "w-all" {
		t.Fatalf("auth of another credential after a revoke = %+v, %v", w, err)
	}
	ws, err = s.WorkerList(ctx, driver.WorkerListParams{})
	if err != nil || len(ws) != 3 || ws[0].RevokedAt == nil || ws[0].RevokedAt.Before(ws[0].CreatedAt) || ws[1].RevokedAt != nil {
		t.Fatalf("list after the revoke = %+v, %v", ws, err)
	}
	first := *ws[0].RevokedAt
	if err := s.WorkerRevoke(ctx, driver.WorkerRevokeParams{Name: "w-acme"}); err != nil {
		t.Fatalf("a second revoke = %v", err)
	}
	ws, err = s.WorkerList(ctx, driver.WorkerListParams{TenantID: "acme"})
	if err != nil || workerNames(ws) != "[w-acme w-all]" || !ws[0].RevokedAt.Equal(first) {
		t.Fatalf("a second revoke moved the time: %+v (first %v), %v", ws, first, err)
	}
	if err := s.WorkerRevoke(ctx, driver.WorkerRevokeParams{Name: "nobody"}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("revoke of an unknown credential = %v, want ErrNotFound", err)
	}
}

func workerNames(ws []batchtype.Worker) string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.Name
	}
	return fmt.Sprint(names)
}
