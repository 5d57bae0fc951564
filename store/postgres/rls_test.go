package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/rows"
	"github.com/rowfate/rowfate/store/postgres"
	"github.com/rowfate/rowfate/store/storetest"
)

// dropRoles drops roles when the test ends (testdb.DropRoles).
func dropRoles(t testing.TB, roles ...string) { testdb.DropRoles(t, roles...) }

// tenantStore returns a migrated store with a TenantRole, its role made.
func tenantStore(t testing.TB) *postgres.Store {
	t.Helper()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	role := schema + "_tenant"
	dropRoles(t, role)
	s := postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: role})
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTenantRole(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// scoped runs every method that names one tenant with that tenant in its
// context, as the HTTP service does, so the conformance suite runs through
// the tenant role and row-level security. The worker's methods (claims,
// renewals, flushes, effect claims) and those of no tenant or several
// (token checks, deliveries' claims, retention, totals) run as the owner,
// as they do in batchctl serve.
type scoped struct{ *postgres.Store }

func as(ctx context.Context, tenant string) context.Context { return driver.WithTenant(ctx, tenant) }

func (s scoped) BatchIngest(ctx context.Context, p driver.BatchIngestParams) (*batchtype.Batch, error) {
	return s.Store.BatchIngest(as(ctx, p.TenantID), p)
}
func (s scoped) BatchGet(ctx context.Context, p driver.BatchGetParams) (*batchtype.Batch, error) {
	return s.Store.BatchGet(as(ctx, p.TenantID), p)
}
func (s scoped) BatchFind(ctx context.Context, p driver.BatchFindParams) (*batchtype.Batch, error) {
	return s.Store.BatchFind(as(ctx, p.TenantID), p)
}
func (s scoped) BatchList(ctx context.Context, p driver.BatchListParams) ([]*batchtype.Batch, error) {
	return s.Store.BatchList(as(ctx, p.TenantID), p)
}
func (s scoped) BatchCancel(ctx context.Context, p driver.BatchControlParams) (*batchtype.Batch, error) {
	return s.Store.BatchCancel(as(ctx, p.TenantID), p)
}
func (s scoped) BatchPause(ctx context.Context, p driver.BatchControlParams, paused bool) (*batchtype.Batch, error) {
	return s.Store.BatchPause(as(ctx, p.TenantID), p, paused)
}
func (s scoped) Pause(ctx context.Context, p driver.PauseParams) error {
	return s.Store.Pause(as(ctx, p.TenantID), p)
}
func (s scoped) Paused(ctx context.Context, tenantID string) ([]string, error) {
	return s.Store.Paused(as(ctx, tenantID), tenantID)
}
func (s scoped) RowsRetry(ctx context.Context, p driver.RowsRetryParams) (int64, error) {
	return s.Store.RowsRetry(as(ctx, p.TenantID), p)
}
func (s scoped) RowSettle(ctx context.Context, p driver.RowSettleParams) error {
	return s.Store.RowSettle(as(ctx, p.TenantID), p)
}
func (s scoped) RowsList(ctx context.Context, p driver.RowsListParams) ([]batchtype.Row, error) {
	return s.Store.RowsList(as(ctx, p.TenantID), p)
}
func (s scoped) RowsCount(ctx context.Context, p driver.RowsCountParams) (rows.Counts, error) {
	return s.Store.RowsCount(as(ctx, p.TenantID), p)
}
func (s scoped) EventsList(ctx context.Context, p driver.EventsListParams) ([]batchtype.Event, error) {
	return s.Store.EventsList(as(ctx, p.TenantID), p)
}
func (s scoped) BatchRerun(ctx context.Context, p driver.BatchRerunParams) (*batchtype.Batch, error) {
	return s.Store.BatchRerun(as(ctx, p.TenantID), p)
}
func (s scoped) RowReview(ctx context.Context, p driver.RowReviewParams) error {
	return s.Store.RowReview(as(ctx, p.TenantID), p)
}
func (s scoped) RowsBulk(ctx context.Context, p driver.RowsBulkParams) (int64, error) {
	return s.Store.RowsBulk(as(ctx, p.TenantID), p)
}
func (s scoped) RowsEdit(ctx context.Context, p driver.RowsEditParams) (int64, error) {
	return s.Store.RowsEdit(as(ctx, p.TenantID), p)
}
func (s scoped) HistoryList(ctx context.Context, p driver.HistoryListParams) ([]batchtype.HistoryEntry, error) {
	return s.Store.HistoryList(as(ctx, p.TenantID), p)
}
func (s scoped) TokenCreate(ctx context.Context, p driver.TokenCreateParams) (*batchtype.Token, error) {
	return s.Store.TokenCreate(as(ctx, p.TenantID), p)
}
func (s scoped) TokenList(ctx context.Context, tenantID string) ([]batchtype.Token, error) {
	return s.Store.TokenList(as(ctx, tenantID), tenantID)
}
func (s scoped) TokenRevoke(ctx context.Context, tenantID string, id int64) error {
	return s.Store.TokenRevoke(as(ctx, tenantID), tenantID, id)
}
func (s scoped) EndpointCreate(ctx context.Context, p driver.EndpointCreateParams) (*batchtype.Endpoint, error) {
	return s.Store.EndpointCreate(as(ctx, p.TenantID), p)
}
func (s scoped) EndpointList(ctx context.Context, tenantID string) ([]batchtype.Endpoint, error) {
	return s.Store.EndpointList(as(ctx, tenantID), tenantID)
}
func (s scoped) EndpointDisable(ctx context.Context, tenantID string, id int64) error {
	return s.Store.EndpointDisable(as(ctx, tenantID), tenantID, id)
}
func (s scoped) DeliveriesList(ctx context.Context, p driver.DeliveriesListParams) ([]batchtype.Delivery, error) {
	return s.Store.DeliveriesList(as(ctx, p.TenantID), p)
}

// TestConformanceTenantRole runs the whole conformance suite with every
// tenant's call scoped to its tenant by row-level security.
func TestConformanceTenantRole(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) driver.Store { return scoped{tenantStore(t)} })
}

// ingestAs ingests a batch of n valid rows, in chunks of 2, with the
// tenant in the context.
func ingestAs(t testing.TB, s *postgres.Store, tenant string, n int) *batchtype.Batch {
	t.Helper()
	return ingestAsCtx(t, context.Background(), s, tenant, n)
}

// ingestAsCtx is ingestAs with a context.
func ingestAsCtx(t testing.TB, ctx context.Context, s *postgres.Store, tenant string, n int) *batchtype.Batch {
	t.Helper()
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			r := driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 2), State: rows.StateValid,
				Values: []string{fmt.Sprintf("%s-%d", tenant, i)}, KeyDigest: []byte(fmt.Sprintf("%s-%d", tenant, i%(n-1)))}
			if !yield(r, nil) {
				return
			}
		}
	}
	b, err := s.BatchIngest(as(ctx, tenant), driver.BatchIngestParams{
		TenantID: tenant, Kind: "k", SourceName: tenant + ".csv", Header: []string{"a"}, Rows: seq,
		IdempotencyKey: "key-" + tenant,
		DuplicateKey:   driver.DuplicateKey{Column: "a", Field: "A", Name: "a"},
	})
	if err != nil {
		t.Fatalf("ingest as %s: %v", tenant, err)
	}
	return b
}

// TestTenantRoleIsolation: with tenant a in the context, calls that name
// tenant b's batches with tenant b in their parameters — which the
// queries' own filters let through — find nothing: the database refuses.
// The owner, with no tenant in the context, finds them.
func TestTenantRoleIsolation(t *testing.T) {
	t.Parallel()
	s := tenantStore(t)
	bg := context.Background()
	ctxA := as(bg, "a")
	a := ingestAs(t, s, "a", 4)
	b := ingestAs(t, s, "b", 4)
	if a.Counts[rows.StateInvalid] != 1 || b.Counts[rows.StateValid] != 3 {
		t.Fatalf("ingested: %v, %v", a.Counts, b.Counts)
	}
	if _, err := s.TokenCreate(as(bg, "b"), driver.TokenCreateParams{TenantID: "b", Name: "n", Role: batchtype.RoleAdmin, TokenHash: "hb"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndpointCreate(as(bg, "b"), driver.EndpointCreateParams{TenantID: "b", URL: "https://b.example", Secret: "whsec_b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RowReview(as(bg, "b"), driver.RowReviewParams{TenantID: "b", BatchID: b.ID, RowNo: 2, From: rows.StateValid, State: rows.StateSkipped, Actor: "bob", Action: "skip"}); err != nil {
		t.Fatal(err)
	}

	// Every read of tenant b's, by tenant b's own parameters, as a and as
	// the owner: nothing as a, everything as the owner.
	for _, c := range []struct {
		name  string
		ctx   context.Context
		found bool
	}{{"tenant a", ctxA, false}, {"owner", bg, true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			_, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: "b", ID: b.ID})
			check(t, c.found, err == nil, errors.Is(err, driver.ErrNotFound), "BatchGet", err)
			_, err = s.BatchFind(ctx, driver.BatchFindParams{TenantID: "b", IdempotencyKey: "key-b"})
			check(t, c.found, err == nil, errors.Is(err, driver.ErrNotFound), "BatchFind", err)
			bs, err := s.BatchList(ctx, driver.BatchListParams{TenantID: "b"})
			check(t, c.found, err == nil && len(bs) == 1, err == nil && len(bs) == 0, "BatchList", err)
			rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "b", BatchID: b.ID})
			check(t, c.found, err == nil && len(rs) == 4, err == nil && len(rs) == 0, "RowsList", err)
			n, err := s.RowsCount(ctx, driver.RowsCountParams{TenantID: "b", BatchID: b.ID})
			check(t, c.found, err == nil && len(n) > 0, err == nil && len(n) == 0, "RowsCount", err)
			evs, err := s.EventsList(ctx, driver.EventsListParams{TenantID: "b", BatchID: b.ID})
			check(t, c.found, err == nil && len(evs) == 2, errors.Is(err, driver.ErrNotFound), "EventsList", err)
			h, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: "b", BatchID: b.ID})
			check(t, c.found, err == nil && len(h) == 1, errors.Is(err, driver.ErrNotFound), "HistoryList", err)
			toks, err := s.TokenList(ctx, "b")
			check(t, c.found, err == nil && len(toks) == 1, err == nil && len(toks) == 0, "TokenList", err)
			eps, err := s.EndpointList(ctx, "b")
			check(t, c.found, err == nil && len(eps) == 1, err == nil && len(eps) == 0, "EndpointList", err)
		})
	}

	// Writes to tenant b's, by its own parameters, as a: not found, and
	// nothing changed.
	if _, err := s.BatchCancel(ctxA, driver.BatchControlParams{TenantID: "b", ID: b.ID}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("cancel of b's batch as a = %v, want ErrNotFound", err)
	}
	if _, err := s.BatchPause(ctxA, driver.BatchControlParams{TenantID: "b", ID: b.ID}, true); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("pause of b's batch as a = %v, want ErrNotFound", err)
	}
	if err := s.RowReview(ctxA, driver.RowReviewParams{TenantID: "b", BatchID: b.ID, RowNo: 3, From: rows.StateValid, State: rows.StateSkipped, Action: "skip"}); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("review of b's row as a = %v, want ErrNotFound", err)
	}
	if _, err := s.BatchIngest(ctxA, driver.BatchIngestParams{TenantID: "b", Kind: "k", SourceName: "x.csv",
		Rows: func(func(driver.IngestRow, error) bool) {}}); err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Fatalf("ingest for b as a = %v, want a row-level security violation", err)
	}
	if got, err := s.BatchGet(bg, driver.BatchGetParams{TenantID: "b", ID: b.ID}); err != nil || got.Status != batchtype.StatusRunning || got.Paused ||
		got.Counts[rows.StateSkipped] != 1 || got.Counts[rows.StateValid] != 2 {
		t.Fatalf("b's batch after a's attempts: %+v, %v", got, err)
	}

	// A raw statement in a store transaction scoped to a (the Tx a
	// transactional processor is given) runs as the role and sees a's
	// rows only; an insert for b fails; an update of b's rows finds none.
	l, err := s.ChunkClaim(bg, driver.ChunkClaimParams{Owner: "w", TenantIDs: []string{"a"}, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	schema := s.Schema()
	_, err = s.ChunkFlush(ctxA, driver.ChunkFlushParams{TenantID: "a", BatchID: l.BatchID, ChunkNo: l.ChunkNo, Token: l.Token,
		EffectFunc: func(ctx context.Context, tx driver.Tx) ([]driver.RowOutcome, error) {
			var user, setting string
			var batches, tenants, rowsN int64
			if err := tx.QueryRow(ctx, `SELECT current_user, current_setting('app.tenant_id'),
				(SELECT count(*) FROM `+schema+`.batches), (SELECT count(DISTINCT tenant_id) FROM `+schema+`.batches),
				(SELECT count(*) FROM `+schema+`.batch_rows)`).Scan(&user, &setting, &batches, &tenants, &rowsN); err != nil {
				return nil, err
			}
			if user != schema+"_tenant" || setting != "a" || batches != 1 || tenants != 1 || rowsN != 4 {
				t.Errorf("as tenant a: user %s, app.tenant_id %s, %d batches of %d tenants, %d rows", user, setting, batches, tenants, rowsN)
			}
			for _, stmt := range []string{
				`INSERT INTO ` + schema + `.batches (tenant_id, kind, source_name, header, options, max_attempts, status, created_at)
					VALUES ('b', 'k', 'evil.csv', '[]', '{}', 5, 'running', now())`,
				`INSERT INTO ` + schema + `.batch_rows (batch_id, row_no, tenant_id, chunk_no, state, payload) VALUES (` + fmt.Sprint(b.ID) + `, 99, 'b', 0, 'valid', '[]')`,
				`UPDATE ` + schema + `.batch_rows SET tenant_id = 'b' WHERE batch_id = ` + fmt.Sprint(a.ID),
				`INSERT INTO ` + schema + `.pauses (tenant_id, scope, value) VALUES ('b', 'tenant', '')`,
				`SELECT count(*) FROM ` + schema + `.workers`,
			} {
				if _, err := tx.Exec(ctx, `SAVEPOINT probe`); err != nil {
					return nil, err
				}
				if _, err := tx.Exec(ctx, stmt); err == nil {
					t.Errorf("as tenant a, %s: no error", stmt)
				} else if !strings.Contains(err.Error(), "row-level security") && !strings.Contains(err.Error(), "permission denied") {
					t.Errorf("as tenant a, %s: %v", stmt, err)
				}
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT probe`); err != nil {
					return nil, err
				}
			}
			for _, stmt := range []string{
				`UPDATE ` + schema + `.batch_rows SET state = 'failed' WHERE batch_id = ` + fmt.Sprint(b.ID),
				`DELETE FROM ` + schema + `.batch_events WHERE batch_id = ` + fmt.Sprint(b.ID),
				`UPDATE ` + schema + `.api_tokens SET revoked_at = now()`,
			} {
				if n, err := tx.Exec(ctx, stmt); err != nil || n != 0 {
					t.Errorf("as tenant a, %s: %d rows, %v", stmt, n, err)
				}
			}
			// What the store's own statements take, as the role: an
			// advisory lock and a notification.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(42), pg_notify('rowfate_probe', 'x')`); err != nil {
				t.Errorf("advisory lock and notify as tenant a: %v", err)
			}
			return nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.BatchGet(bg, driver.BatchGetParams{TenantID: "b", ID: b.ID}); err != nil || got.Counts[rows.StateValid] != 2 {
		t.Fatalf("b's batch after a's transaction: %+v, %v", got, err)
	}

	// The pool's connections are the owner's again, with no tenant set.
	checkPoolIsOwners(t, s.Pool())
}

// check fails unless the result is the one expected of the caller: found
// (the owner) or hidden (another tenant).
func check(t *testing.T, wantFound, found, hidden bool, what string, err error) {
	t.Helper()
	if wantFound && !found {
		t.Errorf("%s: not found (%v)", what, err)
	}
	if !wantFound && !hidden {
		t.Errorf("%s: not hidden (%v)", what, err)
	}
}

// checkPoolIsOwners checks every idle connection of the pool: no role, no
// tenant left over from a tenant's transaction.
func checkPoolIsOwners(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	conns := pool.AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connection")
	}
	for _, c := range conns {
		var user, session, setting string
		err := c.QueryRow(ctx, `SELECT current_user, session_user, coalesce(current_setting('app.tenant_id', true), '')`).Scan(&user, &session, &setting)
		c.Release()
		if err != nil || user != session || setting != "" {
			t.Errorf("a pooled connection after tenants' transactions: user %q, app.tenant_id %q, %v", user, setting, err)
		}
	}
}

// TestTenantRoleOperations: tenant a's own work, as tenant a, end to end:
// ingest (through COPY), reads, control, a worker's outcomes, retry,
// review, re-run, events, tokens and endpoints, and the notification of
// an event committed by the role.
func TestTenantRoleOperations(t *testing.T) {
	t.Parallel()
	s := tenantStore(t)
	bg := context.Background()
	ctx := as(bg, "a")

	notified := make(chan int64, 100)
	listenCtx, stop := context.WithCancel(bg)
	defer stop()
	listening := make(chan struct{})
	var once sync.Once
	go func() {
		_ = s.NotifyEvents(listenCtx, func(id, _ int64) {
			if id == 0 {
				once.Do(func() { close(listening) })
				return
			}
			notified <- id
		})
	}()
	<-listening

	b := ingestAs(t, s, "a", 6)
	select {
	case id := <-notified:
		if id != b.ID {
			t.Fatalf("notified batch %d, want %d", id, b.ID)
		}
	case <-time.After(testenv.Patience(t)):
		t.Fatal("no notification of the ingest as tenant a")
	}
	if got, err := s.BatchGet(ctx, driver.BatchGetParams{TenantID: "a", ID: b.ID}); err != nil || got.Counts[rows.StateValid] != 5 || got.Counts[rows.StateInvalid] != 1 {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if got, err := s.BatchFind(ctx, driver.BatchFindParams{TenantID: "a", IdempotencyKey: "key-a"}); err != nil || got.ID != b.ID {
		t.Fatalf("find: %+v, %v", got, err)
	}
	if rs, err := s.RowsList(ctx, driver.RowsListParams{TenantID: "a", BatchID: b.ID, Limit: 4}); err != nil || len(rs) != 4 || rs[0].Values[0] != "a-0" {
		t.Fatalf("rows: %+v, %v", rs, err)
	}

	// A worker (the owner) fails two rows; tenant a retries them.
	for range 3 {
		l, err := s.ChunkClaim(bg, driver.ChunkClaimParams{Owner: "w", BatchID: b.ID, LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]driver.RowOutcome, len(l.Rows))
		for i, r := range l.Rows {
			outs[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateSucceeded, ResultID: "ok"}
			if r.RowNo <= 3 {
				outs[i] = driver.RowOutcome{RowNo: r.RowNo, State: rows.StateFailed, Error: &rows.FieldError{Row: r.RowNo, Code: "no", Message: "no"}}
			}
		}
		if _, err := s.ChunkFlush(bg, driver.ChunkFlushParams{TenantID: "a", BatchID: b.ID, ChunkNo: l.ChunkNo, Token: l.Token, Outcomes: outs, Release: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.RowsRetry(ctx, driver.RowsRetryParams{TenantID: "a", BatchID: b.ID, States: []rows.State{rows.StateFailed}}); err != nil || n != 2 {
		t.Fatalf("retry: %d, %v", n, err)
	}
	if _, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: "a", ID: b.ID}, true); err != nil {
		t.Fatal(err)
	}
	if got, err := s.BatchPause(ctx, driver.BatchControlParams{TenantID: "a", ID: b.ID}, false); err != nil || got.Paused {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	if err := s.RowReview(ctx, driver.RowReviewParams{TenantID: "a", BatchID: b.ID, RowNo: 2, From: rows.StateValid, State: rows.StateValid,
		Values: []string{"fixed"}, Actor: "ann", Action: "edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BatchRerun(ctx, driver.BatchRerunParams{TenantID: "a", BatchID: b.ID, Actor: "ann",
		Replace: []driver.RerunRow{{RowNo: 3, State: rows.StateValid, Values: []string{"again"}}},
		Add:     []driver.IngestRow{{RowNo: 8, ChunkNo: 3, State: rows.StateValid, Values: []string{"new"}}}}); err != nil {
		t.Fatal(err)
	}
	// The retry, the edit and the re-run, each written under the tenant's role.
	if h, err := s.HistoryList(ctx, driver.HistoryListParams{TenantID: "a", BatchID: b.ID}); err != nil || len(h) != 3 || h[0].Action != "retry" {
		t.Fatalf("history: %+v, %v", h, err)
	}
	if err := s.Pause(ctx, driver.PauseParams{TenantID: "a", Kind: "k", Paused: true}); err != nil {
		t.Fatal(err)
	}
	if kinds, err := s.Paused(ctx, "a"); err != nil || len(kinds) != 1 {
		t.Fatalf("paused: %v, %v", kinds, err)
	}
	if err := s.Pause(ctx, driver.PauseParams{TenantID: "a", Kind: "k"}); err != nil {
		t.Fatal(err)
	}

	// An endpoint, then a cancel: the cancel's transaction, as tenant a,
	// writes the delivery to the outbox.
	ep, err := s.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: "a", URL: "https://a.example", Secret: "whsec_a"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.BatchCancel(ctx, driver.BatchControlParams{TenantID: "a", ID: b.ID})
	if err != nil || got.Status != batchtype.StatusCancelled {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	if ds, err := s.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: "a"}); err != nil || len(ds) != 1 || ds[0].EndpointID != ep.ID {
		t.Fatalf("deliveries: %+v, %v", ds, err)
	}
	evs, err := s.EventsList(ctx, driver.EventsListParams{TenantID: "a", BatchID: b.ID})
	if err != nil || len(evs) < 8 || evs[len(evs)-1].Type != batchtype.EventCancelled {
		t.Fatalf("events: %d, %v", len(evs), err)
	}
	if eps, err := s.EndpointList(ctx, "a"); err != nil || len(eps) != 1 {
		t.Fatalf("endpoints: %+v, %v", eps, err)
	}
	if err := s.EndpointDisable(ctx, "a", ep.ID); err != nil {
		t.Fatal(err)
	}

	tok, err := s.TokenCreate(ctx, driver.TokenCreateParams{TenantID: "a", Name: "ci", Role: batchtype.RoleViewer, TokenHash: "ha"})
	if err != nil {
		t.Fatal(err)
	}
	if toks, err := s.TokenList(ctx, "a"); err != nil || len(toks) != 1 {
		t.Fatalf("tokens: %+v, %v", toks, err)
	}
	if err := s.TokenRevoke(ctx, "a", tok.ID); err != nil {
		t.Fatal(err)
	}
	// A token is checked before its tenant is known: as the owner.
	if _, err := s.TokenAuth(bg, "ha"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("auth of a revoked token = %v", err)
	}
	storetest.CheckInvariant(t, scoped{s}, "a", b.ID)
	checkPoolIsOwners(t, s.Pool())
}

// TestTenantRoleOwnerSeesAll: without a tenant in the context, the store
// runs as the pool's user, which owns the tables: a worker claims the
// chunks of every tenant.
func TestTenantRoleOwnerSeesAll(t *testing.T) {
	t.Parallel()
	s := tenantStore(t)
	ctx := context.Background()
	ingestAs(t, s, "a", 2)
	ingestAs(t, s, "b", 2)
	seen := map[string]bool{}
	for {
		l, err := s.ChunkClaim(ctx, driver.ChunkClaimParams{Owner: "w", LeaseDuration: time.Minute})
		if errors.Is(err, driver.ErrNoWork) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[l.TenantID] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("tenants claimed: %v", seen)
	}
	if kinds, err := s.KindsOpen(ctx, nil); err != nil || len(kinds) != 1 {
		t.Fatalf("kinds open: %v, %v", kinds, err)
	}
}

// TestEnsureTenantRoleConcurrent: eight stores, each with its own pool
// (eight replicas starting together), ensure a role that does not exist
// yet at once, then once more each: all succeed.
func TestEnsureTenantRoleConcurrent(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	pool0 := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool0.Config())
	role := schema + "_tenant"
	dropRoles(t, role)
	ctx := context.Background()
	if err := postgres.New(pool0, &postgres.Config{Schema: schema}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 8
	stores := make([]*postgres.Store, n)
	for i := range stores {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if err := pool.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		stores[i] = postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: role})
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i, s := range stores {
		wg.Go(func() {
			<-start
			errs[i] = s.EnsureTenantRole(ctx)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
	for i, s := range stores {
		if err := s.EnsureTenantRole(ctx); err != nil {
			t.Errorf("store %d, again: %v", i, err)
		}
	}
	ingestAs(t, stores[0], "a", 2)
}

// TestEnsureTenantRoleRefusesOwner: a role the policies do not apply to
// (here the superuser the tests connect as) is refused, and so is no role.
func TestEnsureTenantRoleRefusesOwner(t *testing.T) {
	t.Parallel()
	pool := testdb.PostgresPool(t)
	schema := testdb.SchemaOf(pool.Config())
	ctx := context.Background()
	if err := postgres.New(pool, &postgres.Config{Schema: schema}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: "postgres"}).EnsureTenantRole(ctx); err == nil || !strings.Contains(err.Error(), "row-level security would not apply") {
		t.Fatalf("ensure the superuser as tenant role = %v", err)
	}
	if err := postgres.New(pool, &postgres.Config{Schema: schema}).EnsureTenantRole(ctx); err == nil {
		t.Fatal("ensure without a TenantRole: no error")
	}
}

// TestEnsureTenantRoleNotSuperuser: a migrating user that is not a
// superuser but may create roles (as on a managed PostgreSQL) creates the
// role, becomes its member so that it can SET ROLE, and grants it the
// tables it owns; the role then works.
func TestEnsureTenantRoleNotSuperuser(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	schema := testdb.PostgresSchemaName(t)
	owner, role := schema+"_owner", schema+"_tenant"
	dropRoles(t, role, owner)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{owner}.Sanitize()
	if _, err := admin.Exec(ctx, `CREATE ROLE `+ident+` NOLOGIN CREATEROLE; GRANT CREATE ON DATABASE `+pgx.Identifier{admin.Config().Database}.Sanitize()+` TO `+ident); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["role"] = owner // every connection is the owner's
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := postgres.New(pool, &postgres.Config{Schema: schema, TenantRole: role})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTenantRole(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTenantRole(ctx); err != nil {
		t.Fatalf("again: %v", err)
	}
	var member bool
	if err := admin.QueryRow(ctx, `SELECT pg_has_role($1, $2, 'MEMBER')`, owner, role).Scan(&member); err != nil || !member {
		t.Fatalf("owner a member of the tenant role: %v, %v", member, err)
	}
	a := ingestAs(t, s, "a", 3)
	ingestAs(t, s, "b", 3)
	if bs, err := s.BatchList(as(ctx, "a"), driver.BatchListParams{TenantID: "b"}); err != nil || len(bs) != 0 {
		t.Fatalf("b's batches as a: %v, %v", bs, err)
	}
	if got, err := s.BatchGet(as(ctx, "a"), driver.BatchGetParams{TenantID: "a", ID: a.ID}); err != nil || got.Counts[rows.StateValid] != 2 {
		t.Fatalf("a's batch as a: %+v, %v", got, err)
	}
	if bs, err := s.BatchList(ctx, driver.BatchListParams{TenantID: "b"}); err != nil || len(bs) != 1 {
		t.Fatalf("b's batches as the owner: %v, %v", bs, err)
	}
	// After tenants' transactions (the ingests' COPY ran as the owner in
	// them), each connection has the role it was opened with.
	for _, c := range pool.AcquireAllIdle(ctx) {
		var user string
		err := c.QueryRow(ctx, `SELECT current_user`).Scan(&user)
		c.Release()
		if err != nil || user != owner {
			t.Errorf("a pooled connection's user: %q, %v; want %s", user, err, owner)
		}
	}
}

// BenchmarkIngestTenantRole compares an ingest as the owner (COPY into
// batch_rows) with one as a tenant (COPY into a temporary table, then one
// INSERT ... SELECT that the policy checks): rows of five cells.
func BenchmarkIngestTenantRole(b *testing.B) {
	s := tenantStore(b)
	const n = 100_000
	seq := func(yield func(driver.IngestRow, error) bool) {
		for i := range n {
			r := driver.IngestRow{RowNo: int64(i + 2), ChunkNo: int64(i / 1000), State: rows.StateValid,
				Values:    []string{fmt.Sprintf("user%d@example.com", i), "Ann Example", "FR", "2024-01-31", "12.50"},
				KeyDigest: []byte(fmt.Sprintf("%016d", i))}
			if !yield(r, nil) {
				return
			}
		}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"owner", context.Background()}, {"tenant", as(context.Background(), "a")}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.BatchIngest(c.ctx, driver.BatchIngestParams{TenantID: "a", Kind: "k", SourceName: "f.csv",
					Header: []string{"email", "name", "country", "signup", "amount"}, Rows: seq,
					DuplicateKey: driver.DuplicateKey{Column: "email", Field: "Email", Name: "email"}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkBatchGetTenantRole: a read outside a transaction as the owner,
// and as a tenant (BEGIN, the settings, the read and COMMIT in one round
// trip).
func BenchmarkBatchGetTenantRole(b *testing.B) {
	s := tenantStore(b)
	bt := ingestAs(b, s, "a", 4)
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"owner", context.Background()}, {"tenant", as(context.Background(), "a")}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.BatchGet(c.ctx, driver.BatchGetParams{TenantID: "a", ID: bt.ID}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func (s scoped) RetentionSet(ctx context.Context, p driver.RetentionSetParams) (*batchtype.RetentionPolicy, error) {
	return s.Store.RetentionSet(as(ctx, p.TenantID), p)
}
func (s scoped) RetentionList(ctx context.Context, tenantID string) ([]batchtype.RetentionPolicy, error) {
	return s.Store.RetentionList(as(ctx, tenantID), tenantID)
}
func (s scoped) RetentionRemove(ctx context.Context, tenantID, kind string) error {
	return s.Store.RetentionRemove(as(ctx, tenantID), tenantID, kind)
}

// ValuesPurge of one tenant runs as the tenant; the sweep of every tenant
// runs as the owner, as batchctl serve's does.
func (s scoped) ValuesPurge(ctx context.Context, p driver.ValuesPurgeParams) ([]batchtype.Purge, error) {
	if p.TenantID != "" {
		ctx = as(ctx, p.TenantID)
	}
	return s.Store.ValuesPurge(ctx, p)
}
