package processors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/rowfate/rowfate/batch"
)

// EffectKey returns a Kind.EffectKeyFunc that names a row's effect by what
// the row is, not where it is: "<kind>/<hex SHA-256 of the kind, the row's
// natural key and the row as JSON>". An identical row imported again, in
// another batch or another file, has the same key, so the engine finds its
// effect done and the row takes the first one's id instead of being sent
// again; a row whose payload changed has another key, and is sent. The
// engine keeps keys per tenant, and the built-in kinds send them
// downstream prefixed with the tenant (see tenantKeys), so two tenants'
// identical rows are two effects. naturalKey may be nil; a row that does
// not encode gets the engine's default key (its place).
func EffectKey[T any](kind string, naturalKey func(T) string) func(T) string {
	return func(row T) string {
		payload, err := json.Marshal(row)
		if err != nil {
			return ""
		}
		var key string
		if naturalKey != nil {
			key = naturalKey(row)
		}
		h := sha256.New()
		// NUL-separated: none of the parts can run into the next.
		for _, part := range [][]byte{[]byte(kind), []byte(key), payload} {
			h.Write(part)
			h.Write([]byte{0})
		}
		return kind + "/" + hex.EncodeToString(h.Sum(nil))
	}
}

// tenantKeys passes p the row's effect key prefixed with its tenant. The
// engine keeps effect keys per tenant, but a downstream that dedupes by
// Idempotency-Key alone sees every tenant's requests under one account:
// two tenants' identical rows would be one effect there, and the second
// tenant would get the first one's id for a customer it never created.
func tenantKeys[T any](p batch.Processor[T]) batch.Processor[T] {
	return batch.ProcessFunc[T](func(ctx context.Context, row T) (string, error) {
		return p.Process(withTenantKey(ctx), row)
	})
}

// withTenantKey returns ctx with its row's effect key prefixed with the
// row's tenant: "<tenant>/<key>".
func withTenantKey(ctx context.Context) context.Context {
	info, ok := batch.RowFrom(ctx)
	if !ok || info.EffectKey == "" {
		return ctx
	}
	info.EffectKey = info.TenantID + "/" + info.EffectKey
	return batch.ContextWithRow(ctx, info)
}
