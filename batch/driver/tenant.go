package driver

import "context"

// tenantKey carries a request's tenant in its context.
type tenantKey struct{}

// WithTenant returns a context that carries the tenant a request acts for.
// A store that enforces tenants in the database (PostgreSQL's row-level
// security, with postgres.Config.TenantRole) scopes every transaction run
// with such a context to that tenant, underneath the queries' own tenant
// filters: a query that forgot its filter still sees one tenant's rows.
// Without a tenant in the context (workers, migrations) nothing changes.
func WithTenant(ctx context.Context, tenantID string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenantID)
}

// TenantFrom returns the tenant WithTenant put in ctx.
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}
