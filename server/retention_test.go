package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/processors/customers"
	"github.com/rowfate/rowfate/server"
)

// TestAPIPurgedBatch: a purged batch says when and how on GET, its rows
// come with null values and values_purged, and its error report is a
// 409 values_purged naming the batch and the date.
func TestAPIPurgedBatch(t *testing.T) {
	t.Parallel()
	h := sqliteAPI(t, apiOptions{})
	file := []byte("email,name,country,signup_date,amount\np1@example.com,Ann,FR,2021-03-04,1\nnot-an-email,Bob,FR,2021-03-04,2\n")
	b := h.batchOf(h.upload("/v1/batches", adminA, map[string]string{"kind": "customers"}, "p.csv", file), http.StatusCreated)
	if _, err := h.eng.Work(context.Background(), batch.WorkParams{BatchID: b.ID, TenantIDs: []string{"acme"}, UntilDone: true}); err != nil {
		t.Fatal(err)
	}
	ps, err := h.eng.Purge(context.Background(), batch.PurgeParams{TenantID: "acme", BatchID: b.ID})
	if err != nil || len(ps) != 1 {
		t.Fatalf("purge = %+v, %v", ps, err)
	}
	date := ps[0].At.UTC().Format("2006-01-02")
	if a := h.get(fmt.Sprintf("/v1/batches/%d", b.ID), viewerA); a.status != http.StatusOK ||
		!strings.Contains(string(a.body), `"values_purged_at":"`+date) || !strings.Contains(string(a.body), `"values_purged_by":"command"`) {
		t.Fatalf("purged batch: %s", a)
	}
	if a := h.get(fmt.Sprintf("/v1/batches/%d/rows", b.ID), viewerA); a.status != http.StatusOK ||
		!strings.Contains(string(a.body), `"values":null`) || !strings.Contains(string(a.body), `"values_purged":true`) {
		t.Fatalf("purged rows: %s", a)
	}
	a := h.get(fmt.Sprintf("/v1/batches/%d/report", b.ID), viewerA)
	if p := a.problem(t); a.status != http.StatusConflict || p.Code != "values_purged" || !strings.Contains(p.Detail, date) ||
		!strings.Contains(p.Detail, fmt.Sprintf("batch %d", b.ID)) {
		t.Fatalf("report of a purged batch: %s", a)
	}
}

// TestServicePurgesByPolicy: a running Service applies the tenants'
// retention policies on its sweep: a batch past its policy loses its
// values, one within it keeps them.
func TestServicePurgesByPolicy(t *testing.T) {
	t.Parallel()
	s, reg, files := serviceParts(t)
	eng, err := batch.NewEngine(batch.Config{Store: s, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := eng.RetentionSet(ctx, batch.RetentionSetParams{TenantID: "acme", Kind: customers.Name, ValuesDays: 30}); err != nil {
		t.Fatal(err)
	}
	// Rows all invalid: each batch is finished as it is imported.
	imp := func(name string) int64 {
		b, err := eng.Import(ctx, batch.ImportParams{TenantID: "acme", Kind: customers.Name, SourceName: name,
			Source: strings.NewReader("email,name,signup_date\nnot-an-email," + name + ",2024-01-02\n")})
		if err != nil || b.Status != batchtype.StatusFinished {
			t.Fatalf("import %s = %+v, %v", name, b, err)
		}
		return b.ID
	}
	old, young := imp("old.csv"), imp("young.csv")
	if _, err := s.DB().Exec(`UPDATE batches SET finished_at = finished_at - ? WHERE id = ?`, (40 * 24 * time.Hour).Milliseconds(), old); err != nil {
		t.Fatal(err)
	}
	svc, err := server.NewService(server.ServiceConfig{Store: s, Registry: reg, PurgeEvery: 10 * time.Millisecond,
		Server: server.Config{Files: files, TmpDir: t.TempDir(), Auth: server.NewStaticToken("tok", "acme")}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx, ln) }()
	get := func(id int64) *batchtype.Batch {
		b, err := eng.Batch(ctx, batch.BatchParams{TenantID: "acme", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	testenv.Until(t, func() bool { return get(old).ValuesPurgedAt != nil }, func() string { return fmt.Sprintf("batch %d not purged by the sweep", old) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := get(old); b.ValuesPurgedBy != batchtype.PurgedByPolicy {
		t.Fatalf("swept batch = %+v", b)
	}
	if b := get(young); b.ValuesPurgedAt != nil {
		t.Fatalf("a batch within its policy was purged: %+v", b)
	}
}
