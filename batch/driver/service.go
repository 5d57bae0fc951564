package driver

import (
	"context"
	"strconv"
	"time"
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
	TokenCreate(ctx context.Context, params TokenCreateParams) (*Token, error)
	// TokenAuth returns the live token with that hash, or ErrNotFound.
	TokenAuth(ctx context.Context, tokenHash string) (*Token, error)
	// TokenList lists a tenant's tokens, revoked ones included, oldest first.
	TokenList(ctx context.Context, tenantID string) ([]Token, error)
	// TokenRevoke revokes a tenant's token; ErrNotFound for another
	// tenant's or an unknown id.
	TokenRevoke(ctx context.Context, tenantID string, id int64) error

	// EndpointCreate adds a webhook endpoint of a tenant.
	EndpointCreate(ctx context.Context, params EndpointCreateParams) (*Endpoint, error)
	// EndpointList lists a tenant's enabled endpoints, oldest first.
	EndpointList(ctx context.Context, tenantID string) ([]Endpoint, error)
	// EndpointDisable disables a tenant's endpoint: no new deliveries go
	// to it; pending ones are still tried. ErrNotFound for another
	// tenant's or an unknown id.
	EndpointDisable(ctx context.Context, tenantID string, id int64) error

	// DeliveriesClaim takes up to Limit pending deliveries that are due,
	// of any tenant, and moves their next attempt Lease ahead, so that
	// another process does not send them meanwhile.
	DeliveriesClaim(ctx context.Context, params DeliveriesClaimParams) ([]Delivery, error)
	// DeliveryRecord records one attempt of a delivery.
	DeliveryRecord(ctx context.Context, params DeliveryRecordParams) error
	// DeliveriesList lists a tenant's deliveries, newest first.
	DeliveriesList(ctx context.Context, params DeliveriesListParams) ([]Delivery, error)
}

// Roles of API tokens.
const (
	// RoleAdmin reads and acts.
	RoleAdmin = "admin"
	// RoleViewer reads only.
	RoleViewer = "viewer"
)

// Token is an API token as stored: never the token itself.
type Token struct {
	ID        int64      `json:"id"`
	TenantID  string     `json:"tenant_id"`
	Name      string     `json:"name"`
	Role      string     `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// TokenCreateParams are the parameters of ServiceStore.TokenCreate.
type TokenCreateParams struct {
	TenantID  string
	Name      string
	Role      string
	TokenHash string
}

// Endpoint is a tenant's webhook endpoint.
type Endpoint struct {
	ID       int64  `json:"id"`
	TenantID string `json:"tenant_id"`
	URL      string `json:"url"`
	// Secret signs the deliveries (whsec_...). It is returned once, when
	// the endpoint is created, and is not in listings.
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// EndpointCreateParams are the parameters of ServiceStore.EndpointCreate.
type EndpointCreateParams struct {
	TenantID string
	URL      string
	Secret   string
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryDead      = "dead"
)

// Delivery is one webhook message to one endpoint.
type Delivery struct {
	ID         int64  `json:"id"`
	TenantID   string `json:"tenant_id"`
	EndpointID int64  `json:"endpoint_id"`
	BatchID    int64  `json:"batch_id"`
	EventSeq   int64  `json:"event_seq"`
	EventType  string `json:"event_type"`
	// Payload is the body sent, the same bytes on every attempt.
	Payload       string     `json:"-"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
	// URL and Secret are the endpoint's, for the sender (DeliveriesClaim).
	URL    string `json:"-"`
	Secret string `json:"-"`
}

// MessageID is the delivery's webhook-id: the same on every attempt, so
// that a receiver drops the ones it has seen.
func (d *Delivery) MessageID() string {
	return "msg_rowfate_" + strconv.FormatInt(d.ID, 10)
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
	KindPut(ctx context.Context, params KindPutParams) (*KindDefinition, error)
	// KindGet returns a kind's definition at a version, or its current
	// one for version 0; ErrNotFound when there is none (or it was
	// removed, for version 0).
	KindGet(ctx context.Context, name string, version int64) (*KindDefinition, error)
	// KindList returns every kind's current definition, by name.
	KindList(ctx context.Context) ([]KindDefinition, error)
	// KindRemove removes a kind: it has no current definition from then
	// on; its versions stay, for the batches that recorded them.
	// ErrNotFound when it has no current definition.
	KindRemove(ctx context.Context, name string) error
}

// KindDefinition is one stored version of a kind's definition.
type KindDefinition struct {
	Name    string `json:"name"`
	Version int64  `json:"version"`
	// Format is what Definition is in: "tableschema".
	Format string `json:"format"`
	// Definition is the definition as it was put, byte for byte.
	Definition string    `json:"definition"`
	CreatedAt  time.Time `json:"created_at"`
	// RemovedAt is set on the version current when the kind was removed.
	RemovedAt *time.Time `json:"removed_at,omitempty"`
}

// KindPutParams are the parameters of KindStore.KindPut.
type KindPutParams struct {
	Name string
	// Format defaults to "tableschema".
	Format     string
	Definition string
}
