package driver

import (
	"context"
	"time"

	"github.com/rowfate/rowfate/batchtype"
)

// ServiceStore is what the HTTP service keeps besides batches: API tokens,
// webhook endpoints and the webhook outbox. Both stores implement it;
// store/storetest checks them.
//
// The outbox is written by the store itself: the transaction that appends a
// batch's finished or cancelled event inserts one pending delivery per
// enabled endpoint of its tenant, so a delivery exists exactly when the
// change committed.
type ServiceStore interface {
	// TokenCreate stores an API token (its hash) and returns it with its id.
	// ErrConflict when the hash exists.
	TokenCreate(ctx context.Context, params TokenCreateParams) (*batchtype.Token, error)
	// TokenAuth returns the live token with that hash, or ErrNotFound.
	TokenAuth(ctx context.Context, tokenHash string) (*batchtype.Token, error)
	// TokenList lists a tenant's tokens, revoked ones included, oldest first.
	TokenList(ctx context.Context, tenantID string) ([]batchtype.Token, error)
	// TokenRevoke revokes a tenant's token; ErrNotFound for another
	// tenant's or an unknown id.
	TokenRevoke(ctx context.Context, tenantID string, id int64) error

	// EndpointCreate adds a webhook endpoint of a tenant.
	EndpointCreate(ctx context.Context, params EndpointCreateParams) (*batchtype.Endpoint, error)
	// EndpointList lists a tenant's enabled endpoints, oldest first.
	EndpointList(ctx context.Context, tenantID string) ([]batchtype.Endpoint, error)
	// EndpointDisable disables a tenant's endpoint: no new deliveries go
	// to it; pending ones are still tried. ErrNotFound for another
	// tenant's or an unknown id.
	EndpointDisable(ctx context.Context, tenantID string, id int64) error

	// DeliveriesClaim takes up to Limit pending deliveries that are due,
	// of any tenant, and moves their next attempt Lease ahead, so that
	// another process does not send them meanwhile.
	DeliveriesClaim(ctx context.Context, params DeliveriesClaimParams) ([]batchtype.Delivery, error)
	// DeliveryRecord records one attempt of a delivery.
	DeliveryRecord(ctx context.Context, params DeliveryRecordParams) error
	// DeliveriesList lists a tenant's deliveries, newest first.
	DeliveriesList(ctx context.Context, params DeliveriesListParams) ([]batchtype.Delivery, error)
}

// TokenCreateParams are the parameters of ServiceStore.TokenCreate.
type TokenCreateParams struct {
	TenantID  string
	Name      string
	Role      string
	TokenHash string
}

// EndpointCreateParams are the parameters of ServiceStore.EndpointCreate.
type EndpointCreateParams struct {
	TenantID string
	URL      string
	Secret   string
}

// DeliveriesClaimParams are the parameters of ServiceStore.DeliveriesClaim.
type DeliveriesClaimParams struct {
	Limit int
	// Lease is how long the claimed deliveries are this sender's.
	Lease time.Duration
}

// DeliveryRecordParams record one attempt.
type DeliveryRecordParams struct {
	ID int64
	// Status is the delivery's state after the attempt: delivered,
	// pending (tried again after RetryIn) or dead.
	Status  string
	RetryIn time.Duration
	// HTTPStatus is the endpoint's answer, 0 when none came.
	HTTPStatus int
	Error      string
}

// DeliveriesListParams are the parameters of ServiceStore.DeliveriesList.
type DeliveriesListParams struct {
	TenantID string
	// Status filters; empty is all.
	Status string
	// BeforeID pages backwards; 0 is from the newest.
	BeforeID int64
	// Limit defaults to 50.
	Limit int
}

// KindStore keeps kinds defined by data (Table Schemas), versioned, so
// that every process knows them without a redeploy. Both stores
// implement it; store/storetest checks them.
type KindStore interface {
	// KindPut stores a new version of a kind's definition (1 for a new
	// kind) and returns it. ErrConflict when another process put a
	// version of the same kind at the same moment: try again.
	KindPut(ctx context.Context, params KindPutParams) (*batchtype.KindDefinition, error)
	// KindGet returns a kind's definition at a version, or its current
	// one for version 0; ErrNotFound when there is none (or it was
	// removed, for version 0).
	KindGet(ctx context.Context, name string, version int64) (*batchtype.KindDefinition, error)
	// KindList returns every kind's current definition, by name.
	KindList(ctx context.Context) ([]batchtype.KindDefinition, error)
	// KindRemove removes a kind: it has no current definition from then
	// on; its versions stay, for the batches that recorded them.
	// ErrNotFound when it has no current definition.
	KindRemove(ctx context.Context, name string) error
}

// KindPutParams are the parameters of KindStore.KindPut.
type KindPutParams struct {
	Name string
	// Format defaults to "tableschema".
	Format     string
	Definition string
}
