package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rowfate/rowfate/batch/driver"
	"github.com/rowfate/rowfate/batchtype"
	"github.com/rowfate/rowfate/rows"
)

// The service's own records — API tokens, webhook endpoints and their
// deliveries, worker credentials — are kept by the store beside the
// batches, and the engine is their front door too: a front end never
// reaches the store below it.

// ErrNoService: the engine's store keeps no tokens, webhook endpoints or
// metrics. Both stores of this module keep them; a store of one's own may
// not.
var ErrNoService = errors.New("the store keeps no API tokens, webhooks or totals")

// WithTenant returns a context that says every store call made with it
// acts for one tenant: a store that enforces tenants in the database
// (PostgreSQL's row-level security, postgres.Config.TenantRole) then sees
// that tenant's rows only, underneath every query's own tenant filter. A
// front end serving one tenant per request wraps the request's context.
func WithTenant(ctx context.Context, tenantID string) context.Context {
	return driver.WithTenant(ctx, tenantID)
}

func (e *Engine) service() (driver.ServiceStore, error) {
	ss, ok := e.store.(driver.ServiceStore)
	if !ok {
		return nil, ErrNoService
	}
	return ss, nil
}

// TokenCreateParams create an API token: its hash is kept, never the
// token.
type TokenCreateParams struct {
	TenantID string
	Name     string
	// Role is batchtype.RoleAdmin (reads and acts) or RoleViewer (reads).
	Role      string
	TokenHash string
}

// TokenCreate keeps an API token's hash; ErrConflict when the hash exists.
func (e *Engine) TokenCreate(ctx context.Context, p TokenCreateParams) (*batchtype.Token, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.TokenCreate(ctx, driver.TokenCreateParams{TenantID: tenantOr(p.TenantID), Name: p.Name, Role: p.Role, TokenHash: p.TokenHash})
}

// TokenAuthParams name a token by its hash.
type TokenAuthParams struct {
	TokenHash string
}

// TokenAuth returns the live token with that hash; ErrNotFound when there
// is none or it was revoked.
func (e *Engine) TokenAuth(ctx context.Context, p TokenAuthParams) (*batchtype.Token, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.TokenAuth(ctx, p.TokenHash)
}

// TokensParams name the tenant whose tokens are listed.
type TokensParams struct {
	TenantID string
}

// Tokens lists a tenant's tokens, revoked ones included, oldest first.
func (e *Engine) Tokens(ctx context.Context, p TokensParams) ([]batchtype.Token, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.TokenList(ctx, tenantOr(p.TenantID))
}

// TokenRevokeParams name a tenant's token.
type TokenRevokeParams struct {
	TenantID string
	ID       int64
}

// TokenRevoke revokes a tenant's token; ErrNotFound for another tenant's
// or an unknown id.
func (e *Engine) TokenRevoke(ctx context.Context, p TokenRevokeParams) error {
	ss, err := e.service()
	if err != nil {
		return err
	}
	return ss.TokenRevoke(ctx, tenantOr(p.TenantID), p.ID)
}

// EndpointCreateParams add a webhook endpoint.
type EndpointCreateParams struct {
	TenantID string
	URL      string
	// Secret signs the deliveries (whsec_...).
	Secret string
}

// EndpointCreate adds a webhook endpoint of a tenant.
func (e *Engine) EndpointCreate(ctx context.Context, p EndpointCreateParams) (*batchtype.Endpoint, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.EndpointCreate(ctx, driver.EndpointCreateParams{TenantID: tenantOr(p.TenantID), URL: p.URL, Secret: p.Secret})
}

// EndpointsParams name the tenant whose endpoints are listed.
type EndpointsParams struct {
	TenantID string
}

// Endpoints lists a tenant's enabled endpoints, oldest first, with their
// secrets.
func (e *Engine) Endpoints(ctx context.Context, p EndpointsParams) ([]batchtype.Endpoint, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.EndpointList(ctx, tenantOr(p.TenantID))
}

// EndpointDisableParams name a tenant's endpoint.
type EndpointDisableParams struct {
	TenantID string
	ID       int64
}

// EndpointDisable disables an endpoint: no new deliveries go to it;
// pending ones are still tried. ErrNotFound for another tenant's or an
// unknown id.
func (e *Engine) EndpointDisable(ctx context.Context, p EndpointDisableParams) error {
	ss, err := e.service()
	if err != nil {
		return err
	}
	return ss.EndpointDisable(ctx, tenantOr(p.TenantID), p.ID)
}

// DeliveriesParams page through a tenant's webhook deliveries, newest
// first.
type DeliveriesParams struct {
	TenantID string
	// Status filters: batchtype.DeliveryPending, DeliveryDelivered or
	// DeliveryDead; empty is any.
	Status string
	// BeforeID pages backwards; 0 starts from the newest.
	BeforeID int64
	// Limit caps the page. Defaults to 50.
	Limit int
}

// Deliveries returns one page of a tenant's webhook deliveries.
func (e *Engine) Deliveries(ctx context.Context, p DeliveriesParams) ([]batchtype.Delivery, error) {
	ss, err := e.service()
	if err != nil {
		return nil, err
	}
	return ss.DeliveriesList(ctx, driver.DeliveriesListParams{TenantID: tenantOr(p.TenantID), Status: p.Status, BeforeID: p.BeforeID, Limit: p.Limit})
}

// WorkerCreateParams create a worker credential.
type WorkerCreateParams struct {
	// Name is unique across tenants.
	Name      string
	TokenHash string
	// TenantIDs are the tenants it may work; nil is every tenant.
	TenantIDs []string
}

// WorkerCreate keeps a worker credential; ErrConflict when the name or the
// hash exists.
func (e *Engine) WorkerCreate(ctx context.Context, p WorkerCreateParams) error {
	return e.store.WorkerCreate(ctx, driver.WorkerCreateParams{Name: p.Name, TokenHash: p.TokenHash, TenantIDs: p.TenantIDs})
}

// WorkerAuthParams name a worker credential by its token's hash.
type WorkerAuthParams struct {
	TokenHash string
}

// WorkerAuth returns the live credential with that hash; ErrNotFound when
// there is none or it was revoked.
func (e *Engine) WorkerAuth(ctx context.Context, p WorkerAuthParams) (*batchtype.Worker, error) {
	return e.store.WorkerAuth(ctx, p.TokenHash)
}

// WorkersParams filter the worker credentials listed.
type WorkersParams struct {
	// TenantID, when set, keeps the credentials that may work that
	// tenant: its own and those of every tenant. "" lists them all.
	TenantID string
}

// Workers lists worker credentials, revoked ones included.
func (e *Engine) Workers(ctx context.Context, p WorkersParams) ([]batchtype.Worker, error) {
	return e.store.WorkerList(ctx, driver.WorkerListParams{TenantID: p.TenantID})
}

// WorkerRevokeParams name a worker credential.
type WorkerRevokeParams struct {
	Name string
}

// WorkerRevoke revokes a worker credential: a worker using it stops
// claiming at its next check. ErrNotFound for an unknown name.
func (e *Engine) WorkerRevoke(ctx context.Context, p WorkerRevokeParams) error {
	return e.store.WorkerRevoke(ctx, driver.WorkerRevokeParams{Name: p.Name})
}

// RowTotals counts every batch's rows by state, over every tenant, from
// one aggregate over the count groups: cheap enough for a metrics scrape.
// ErrNoService when the store does not keep such totals.
func (e *Engine) RowTotals(ctx context.Context) (rows.Counts, error) {
	st, ok := e.store.(driver.StatsStore)
	if !ok {
		return nil, fmt.Errorf("row totals: %w", ErrNoService)
	}
	return st.RowTotals(ctx)
}

// TrimEventsParams say which events retention removes.
type TrimEventsParams struct {
	// OlderThan trims events older than this (database clock); 0 trims
	// none by age.
	OlderThan time.Duration
	// FinishedKeepLast trims every event of a finished or cancelled batch
	// but its last.
	FinishedKeepLast bool
}

// TrimEvents applies an event retention to every tenant's batches and
// returns how many events it removed; a subscriber whose cursor falls in
// the trimmed part gets ErrCursorExpired and goes on from what is left.
func (e *Engine) TrimEvents(ctx context.Context, p TrimEventsParams) (int64, error) {
	return e.store.EventsTrim(ctx, driver.EventsTrimParams(p))
}

func (e *Engine) kindStore() (driver.KindStore, error) {
	ks, ok := e.store.(driver.KindStore)
	if !ok {
		return nil, fmt.Errorf("stored kinds: %w", ErrNoService)
	}
	return ks, nil
}

// KindPutParams store a new version of a kind's definition.
type KindPutParams struct {
	Name string
	// Format defaults to "tableschema".
	Format     string
	Definition string
}

// KindPut stores a new version of a kind's definition and returns it.
func (e *Engine) KindPut(ctx context.Context, p KindPutParams) (*batchtype.KindDefinition, error) {
	ks, err := e.kindStore()
	if err != nil {
		return nil, err
	}
	return ks.KindPut(ctx, driver.KindPutParams(p))
}

// KindGetParams name a stored kind's version.
type KindGetParams struct {
	Name string
	// Version 0 is the current one.
	Version int64
}

// KindGet returns a version of a stored kind's definition; ErrNotFound
// when there is none (or, for version 0, the kind was removed).
func (e *Engine) KindGet(ctx context.Context, p KindGetParams) (*batchtype.KindDefinition, error) {
	ks, err := e.kindStore()
	if err != nil {
		return nil, err
	}
	return ks.KindGet(ctx, p.Name, p.Version)
}

// KindList returns the current definition of every stored kind.
func (e *Engine) KindList(ctx context.Context) ([]batchtype.KindDefinition, error) {
	ks, err := e.kindStore()
	if err != nil {
		return nil, err
	}
	return ks.KindList(ctx)
}

// KindRemoveParams name a stored kind.
type KindRemoveParams struct {
	Name string
}

// KindRemove removes a stored kind: it has no current definition from
// then on, while its versions stay for the batches that recorded them.
// ErrNotFound when it has no current definition.
func (e *Engine) KindRemove(ctx context.Context, p KindRemoveParams) error {
	ks, err := e.kindStore()
	if err != nil {
		return err
	}
	return ks.KindRemove(ctx, p.Name)
}
