package storesql

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/migrations"
)

// serviceStatements are the statements of API tokens, webhook endpoints
// and the webhook outbox, expanded once for the dialect.
type serviceStatements struct {
	tokenCreate, tokenAuth, tokenList, tokenRevoke                        string
	workerList, workerRevoke                                              string
	endpointCreate, endpointList, endpointDisable                         string
	enqueueHooks, claimDeliveries, recordDelivery, listDeliveries, active string
}

const deliveryColumns = `d.id, d.tenant_id, d.endpoint_id, d.batch_id, d.event_seq, d.event_type, d.payload, d.status, d.attempts,
	d.next_attempt_at, COALESCE(d.last_status, 0), COALESCE(d.last_error, ''), d.created_at, d.done_at`

func newServiceStatements(d *Dialect) serviceStatements {
	skipLocked := "" // SQLite: one writer at a time
	if d.Engine == migrations.Postgres {
		skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	return serviceStatements{
		tokenCreate: d.Expand(`INSERT INTO {t}api_tokens (tenant_id, name, role, token_hash, created_at) VALUES ($1, $2, $3, $4, {now})
			RETURNING id, created_at`),
		tokenAuth:   d.Expand(`SELECT id, tenant_id, name, role, token_hash, created_at FROM {t}api_tokens WHERE token_hash = $1 AND revoked_at IS NULL`),
		tokenList:   d.Expand(`SELECT id, tenant_id, name, role, created_at, revoked_at FROM {t}api_tokens WHERE tenant_id = $1 ORDER BY id`),
		tokenRevoke: d.Expand(`UPDATE {t}api_tokens SET revoked_at = COALESCE(revoked_at, {now}) WHERE tenant_id = $1 AND id = $2`),
		// Worker credentials are few (one per machine or pool): the list
		// is read whole and narrowed to a tenant in Go, which spares a
		// JSON-array test in each dialect.
		workerList:   d.Expand(`SELECT name, tenant_ids, created_at, revoked_at FROM {t}workers ORDER BY name`),
		workerRevoke: d.Expand(`UPDATE {t}workers SET revoked_at = COALESCE(revoked_at, {now}) WHERE name = $1`),
		endpointCreate: d.Expand(`INSERT INTO {t}webhook_endpoints (tenant_id, url, secret, created_at) VALUES ($1, $2, $3, {now})
			RETURNING id, created_at`),
		endpointList: d.Expand(`SELECT id, tenant_id, url, created_at FROM {t}webhook_endpoints
			WHERE tenant_id = $1 AND disabled_at IS NULL ORDER BY id`),
		endpointDisable: d.Expand(`UPDATE {t}webhook_endpoints SET disabled_at = {now}
			WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NULL`),
		// In the transaction that appends the terminal event: one pending
		// delivery per enabled endpoint of the tenant. The WHERE on the
		// SELECT settles SQLite's parse of INSERT ... SELECT ... ON.
		enqueueHooks: d.Expand(`INSERT INTO {t}webhook_deliveries
				(tenant_id, endpoint_id, batch_id, event_seq, event_type, payload, status, attempts, next_attempt_at, created_at)
			SELECT e.tenant_id, e.id, $2, $3, $4, $5, 'pending', 0, {now}, {now}
			FROM {t}webhook_endpoints e WHERE e.tenant_id = $1 AND e.disabled_at IS NULL
			ON CONFLICT (endpoint_id, batch_id, event_seq) DO NOTHING`),
		// The claim moves next_attempt_at ahead by the lease: a sender
		// that dies leaves the delivery due again when the lease is over.
		claimDeliveries: d.Expand(`UPDATE {t}webhook_deliveries SET next_attempt_at = {now} + CAST($2 AS bigint) * {ms}
			WHERE id IN (SELECT id FROM {t}webhook_deliveries
				WHERE status = 'pending' AND next_attempt_at <= {now}
				ORDER BY next_attempt_at, id LIMIT $1` + skipLocked + `)
			RETURNING id`),
		active: d.Expand(`SELECT ` + deliveryColumns + `, COALESCE(e.url, ''), COALESCE(e.secret, '')
			FROM {t}webhook_deliveries d LEFT JOIN {t}webhook_endpoints e ON e.id = d.endpoint_id
			WHERE ` + d.InInt("d.id", "$1") + ` ORDER BY d.id`),
		recordDelivery: d.Expand(`UPDATE {t}webhook_deliveries SET status = $2, attempts = attempts + 1,
				next_attempt_at = CASE WHEN $2 = 'pending' THEN {now} + CAST($3 AS bigint) * {ms} END,
				last_status = $4, last_error = $5,
				done_at = CASE WHEN $2 = 'pending' THEN NULL ELSE {now} END
			WHERE id = $1 AND status = 'pending'`),
		listDeliveries: d.Expand(`SELECT ` + deliveryColumns + `, '', '' FROM {t}webhook_deliveries d
			WHERE d.tenant_id = $1 AND (CAST($2 AS text) = '' OR d.status = $2) AND (CAST($3 AS bigint) = 0 OR d.id < $3)
			ORDER BY d.id DESC LIMIT $4`),
	}
}

// hookPayload is the body of a webhook message: the Standard Webhooks
// shape, type, timestamp and data.
type hookPayload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      hookData  `json:"data"`
}

type hookData struct {
	TenantID string           `json:"tenant_id"`
	BatchID  int64            `json:"batch_id"`
	Seq      int64            `json:"event_seq"`
	Status   batchtype.Status `json:"status"`
	Paused   bool             `json:"paused,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Counts   any              `json:"counts"`
	Total    int64            `json:"total"`
	Done     int64            `json:"done"`
}

// enqueueHooks writes the outbox rows of a terminal event in its
// transaction.
func (s *Store) enqueueHooks(ctx context.Context, q Querier, tenant string, ev *batchtype.Event) error {
	// A pause the engine made (the failure bound) needs a person; one a
	// person made does not need telling.
	boundPause := ev.Type == batchtype.EventPaused && ev.Reason != ""
	if ev.Type != batchtype.EventFinished && ev.Type != batchtype.EventCancelled && !boundPause {
		return nil
	}
	body, err := json.Marshal(hookPayload{Type: "batch." + string(ev.Type), Timestamp: ev.At.UTC(),
		Data: hookData{TenantID: tenant, BatchID: ev.BatchID, Seq: ev.Seq, Status: ev.Status, Paused: ev.Paused, Reason: ev.Reason,
			Counts: ev.Counts, Total: ev.Total, Done: ev.Done}})
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, s.sv.enqueueHooks, tenant, ev.BatchID, ev.Seq, string(ev.Type), string(body)); err != nil {
		return fmt.Errorf("webhook outbox: %w", err)
	}
	return nil
}

// TokenCreate stores an API token's hash.
func (s *Store) TokenCreate(ctx context.Context, p driver.TokenCreateParams) (*batchtype.Token, error) {
	if p.Role != batchtype.RoleAdmin && p.Role != batchtype.RoleViewer {
		return nil, fmt.Errorf("token role %q: want %s or %s", p.Role, batchtype.RoleAdmin, batchtype.RoleViewer)
	}
	t := &batchtype.Token{TenantID: p.TenantID, Name: p.Name, Role: p.Role}
	var created Time
	if err := s.drv.DB().QueryRow(ctx, s.sv.tokenCreate, p.TenantID, p.Name, p.Role, p.TokenHash).Scan(&t.ID, &created); err != nil {
		return nil, fmt.Errorf("create token %s: %w", p.Name, err)
	}
	t.CreatedAt = created.Time
	return t, nil
}

// TokenAuth returns the live token of a hash; the stored hash is compared
// again in constant time.
func (s *Store) TokenAuth(ctx context.Context, tokenHash string) (*batchtype.Token, error) {
	var (
		t       batchtype.Token
		stored  string
		created Time
	)
	err := s.drv.DB().QueryRow(ctx, s.sv.tokenAuth, tokenHash).Scan(&t.ID, &t.TenantID, &t.Name, &t.Role, &stored, &created)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && subtle.ConstantTimeCompare([]byte(stored), []byte(tokenHash)) != 1) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("api token: %w", err)
	}
	t.CreatedAt = created.Time
	return &t, nil
}

// TokenList lists a tenant's tokens.
func (s *Store) TokenList(ctx context.Context, tenantID string) ([]batchtype.Token, error) {
	rs, err := s.drv.DB().Query(ctx, s.sv.tokenList, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rs.Close()
	out := []batchtype.Token{}
	for rs.Next() {
		var (
			t                batchtype.Token
			created, revoked Time
		)
		if err := rs.Scan(&t.ID, &t.TenantID, &t.Name, &t.Role, &created, &revoked); err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		t.CreatedAt, t.RevokedAt = created.Time, revoked.Ptr()
		out = append(out, t)
	}
	return out, rs.Close()
}

// TokenRevoke revokes a tenant's token.
func (s *Store) TokenRevoke(ctx context.Context, tenantID string, id int64) error {
	n, err := s.drv.DB().Exec(ctx, s.sv.tokenRevoke, tenantID, id)
	if err != nil {
		return fmt.Errorf("revoke token %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("token %d: %w", id, driver.ErrNotFound)
	}
	return nil
}

// WorkerList lists worker credentials by name, revoked ones too; with a
// tenant, those that may work it.
func (s *Store) WorkerList(ctx context.Context, p driver.WorkerListParams) ([]batchtype.Worker, error) {
	rs, err := s.drv.DB().Query(ctx, s.sv.workerList)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	defer rs.Close()
	out := []batchtype.Worker{}
	for rs.Next() {
		var (
			w                batchtype.Worker
			tenants          string
			created, revoked Time
		)
		if err := rs.Scan(&w.Name, &tenants, &created, &revoked); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		if err := json.Unmarshal([]byte(tenants), &w.TenantIDs); err != nil {
			return nil, fmt.Errorf("worker %s tenants: %w", w.Name, err)
		}
		if len(w.TenantIDs) == 0 {
			w.TenantIDs = nil // every tenant, stored as [], as WorkerAuth reads it
		}
		if p.TenantID != "" && w.TenantIDs != nil && !slices.Contains(w.TenantIDs, p.TenantID) {
			continue
		}
		w.CreatedAt, w.RevokedAt = created.Time, revoked.Ptr()
		out = append(out, w)
	}
	return out, rs.Close()
}

// WorkerRevoke revokes a worker credential. A second revoke keeps the
// first time, which is when the credential stopped working.
func (s *Store) WorkerRevoke(ctx context.Context, p driver.WorkerRevokeParams) error {
	n, err := s.drv.DB().Exec(ctx, s.sv.workerRevoke, p.Name)
	if err != nil {
		return fmt.Errorf("revoke worker %s: %w", p.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("worker %s: %w", p.Name, driver.ErrNotFound)
	}
	return nil
}

// EndpointCreate adds a webhook endpoint.
func (s *Store) EndpointCreate(ctx context.Context, p driver.EndpointCreateParams) (*batchtype.Endpoint, error) {
	e := &batchtype.Endpoint{TenantID: p.TenantID, URL: p.URL, Secret: p.Secret}
	var created Time
	if err := s.drv.DB().QueryRow(ctx, s.sv.endpointCreate, p.TenantID, p.URL, p.Secret).Scan(&e.ID, &created); err != nil {
		return nil, fmt.Errorf("create endpoint: %w", err)
	}
	e.CreatedAt = created.Time
	return e, nil
}

// EndpointList lists a tenant's enabled endpoints, without their secrets.
func (s *Store) EndpointList(ctx context.Context, tenantID string) ([]batchtype.Endpoint, error) {
	rs, err := s.drv.DB().Query(ctx, s.sv.endpointList, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	defer rs.Close()
	out := []batchtype.Endpoint{}
	for rs.Next() {
		var (
			e       batchtype.Endpoint
			created Time
		)
		if err := rs.Scan(&e.ID, &e.TenantID, &e.URL, &created); err != nil {
			return nil, fmt.Errorf("list endpoints: %w", err)
		}
		e.CreatedAt = created.Time
		out = append(out, e)
	}
	return out, rs.Close()
}

// EndpointDisable disables a tenant's endpoint.
func (s *Store) EndpointDisable(ctx context.Context, tenantID string, id int64) error {
	n, err := s.drv.DB().Exec(ctx, s.sv.endpointDisable, tenantID, id)
	if err != nil {
		return fmt.Errorf("disable endpoint %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("endpoint %d: %w", id, driver.ErrNotFound)
	}
	return nil
}

// DeliveriesClaim claims due deliveries, then reads them with their
// endpoints' addresses and secrets.
func (s *Store) DeliveriesClaim(ctx context.Context, p driver.DeliveriesClaimParams) ([]batchtype.Delivery, error) {
	if p.Limit <= 0 {
		p.Limit = 10
	}
	if p.Lease <= 0 {
		p.Lease = time.Minute
	}
	var ids []int64
	err := s.drv.InTx(ctx, func(q Querier) error {
		ids = ids[:0]
		rs, err := q.Query(ctx, s.sv.claimDeliveries, p.Limit, p.Lease.Milliseconds())
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rs.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rs, err := s.drv.DB().Query(ctx, s.sv.active, s.d.IntListArg(ids))
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	return scanDeliveries(rs)
}

// DeliveryRecord records an attempt of a pending delivery.
func (s *Store) DeliveryRecord(ctx context.Context, p driver.DeliveryRecordParams) error {
	switch p.Status {
	case batchtype.DeliveryPending, batchtype.DeliveryDelivered, batchtype.DeliveryDead:
	default:
		return fmt.Errorf("delivery %d: unknown status %q", p.ID, p.Status)
	}
	if _, err := s.drv.DB().Exec(ctx, s.sv.recordDelivery, p.ID, p.Status, p.RetryIn.Milliseconds(), p.HTTPStatus, p.Error); err != nil {
		return fmt.Errorf("record delivery %d: %w", p.ID, err)
	}
	return nil
}

// DeliveriesList lists a tenant's deliveries, newest first.
func (s *Store) DeliveriesList(ctx context.Context, p driver.DeliveriesListParams) ([]batchtype.Delivery, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	rs, err := s.drv.DB().Query(ctx, s.sv.listDeliveries, p.TenantID, p.Status, p.BeforeID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return scanDeliveries(rs)
}

func scanDeliveries(rs Rows) ([]batchtype.Delivery, error) {
	defer rs.Close()
	out := []batchtype.Delivery{}
	for rs.Next() {
		var (
			d                   batchtype.Delivery
			next, created, done Time
		)
		if err := rs.Scan(&d.ID, &d.TenantID, &d.EndpointID, &d.BatchID, &d.EventSeq, &d.EventType, &d.Payload, &d.Status, &d.Attempts,
			&next, &d.LastStatus, &d.LastError, &created, &done, &d.URL, &d.Secret); err != nil {
			return nil, fmt.Errorf("deliveries: %w", err)
		}
		d.NextAttemptAt, d.CreatedAt, d.DoneAt = next.Ptr(), created.Time, done.Ptr()
		out = append(out, d)
	}
	return out, rs.Close()
}
